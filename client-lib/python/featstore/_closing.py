"""featstore._closing — what Client and Stream share: a context manager
whose ``close()`` (idempotent) also runs when the object is garbage."""
from __future__ import annotations

from typing import Any


class Closing:
    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass
