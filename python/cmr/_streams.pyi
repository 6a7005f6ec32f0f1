# SPDX-License-Identifier: Apache-2.0
from enum import IntEnum
from typing import Any

NONE_STREAM_MESSAGE: str

def as_stream_handle(stream: object) -> int: ...

class CudaStreamFlags(IntEnum):
    SYNC_DEFAULT = 0
    NON_BLOCKING = 1

class Stream(int):
    def __new__(cls, obj: Any | None = None, flags: CudaStreamFlags | None = None) -> Stream: ...
    @property
    def handle(self) -> int: ...
    def __cuda_stream__(self) -> tuple[int, int]: ...
    def synchronize(self) -> None: ...
    def is_default(self) -> bool: ...

DEFAULT_STREAM: Stream
LEGACY_DEFAULT_STREAM: Stream
PER_THREAD_DEFAULT_STREAM: Stream

def as_stream(stream: object) -> Stream: ...
