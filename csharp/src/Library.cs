// SPDX-License-Identifier: Apache-2.0
namespace Cmr
{
    /// <summary>What the cmr library loaded is.</summary>
    public static class Library
    {
        /// <summary>Its version, "MAJOR.MINOR.PATCH".</summary>
        public static string Version
        {
            get { return CmrNative.cmr_version(); }
        }

        /// <summary>Whether it was built with CUDA (false: the host build).</summary>
        public static bool BuiltWithCuda
        {
            get { return CmrNative.cmr_built_with_cuda(); }
        }
    }
}
