# SPDX-License-Identifier: Apache-2.0
from typing import Any

from .stream import Stream

def as_stream(stream: Any) -> Stream: ...
