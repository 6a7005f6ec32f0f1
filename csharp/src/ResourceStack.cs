// SPDX-License-Identifier: Apache-2.0
using System;

namespace Cmr
{
    /// <summary>
    /// The resources a stack expression describes, e.g.
    /// "statistics(pool(system, initial_pool_size=1MiB))" (cmr/stack.h has
    /// the syntax). A bad expression is a CmrException (InvalidArgument)
    /// naming the column and the problem. Top and Leaf are objects of their
    /// resources' classes, each with a share of its own: they stay usable
    /// after the stack is disposed.
    /// </summary>
    public sealed class ResourceStack : IDisposable
    {
        private readonly StackHandle owned;

        /// <summary>The handle; ObjectDisposedException naming the class once disposed.</summary>
        private StackHandle Handle
        {
            get { return OwnedHandle.Opened(owned, "ResourceStack"); }
        }

        /// <summary>Builds the stack <paramref name="expression"/> describes (CmrArgumentException naming the column for a bad one).</summary>
        public ResourceStack(string expression)
        {
            if (expression == null) throw new ArgumentNullException("expression");
            IntPtr raw;
            CmrNative.cmr_stack_parse(expression, out raw);
            owned = new StackHandle(raw);
            Top = MemoryResource.FromShared(Results.Of<StackHandle, Ref>(CmrNative.cmr_stack_ref, Handle));
            Leaf = MemoryResource.FromShared(Results.Of<StackHandle, Ref>(CmrNative.cmr_stack_leaf, Handle));
        }

        /// <summary>The outermost resource: the one to allocate from.</summary>
        public MemoryResource Top { get; private set; }

        /// <summary>The innermost resource, the leaf the others sit on.</summary>
        public MemoryResource Leaf { get; private set; }

        /// <summary>The expression, with every default written out.</summary>
        public string Expression
        {
            get { return Results.Of<StackHandle, string>(CmrNative.cmr_stack_expression, Handle); }
        }

        /// <summary>Drops the stack's shares (Top and Leaf keep their own until disposed).</summary>
        public void Dispose()
        {
            owned.Dispose();
        }
    }
}
