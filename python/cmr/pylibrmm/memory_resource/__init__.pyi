# SPDX-License-Identifier: Apache-2.0
from ...mr import *  # noqa: F401,F403
from . import experimental as experimental
