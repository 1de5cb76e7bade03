"""The console's HTTP/1.1 protocol for uvicorn: the fast C parser (httptools) with a bound on request headers.

uvicorn's httptools protocol accepts headers of any size, buffering them until they end; a client could grow the
console's memory without limit before it is even authenticated. This protocol answers 431 and closes the connection
once a request's headers pass `max_header_bytes` without ending. Without httptools (it has no build for the
platform) the console uses uvicorn's h11 protocol, whose bound is `h11_max_incomplete_event_size`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["http_protocol"]


def http_protocol(max_header_bytes: int) -> Any:
    """Return the protocol class (or uvicorn's name of one) to serve HTTP/1.1 with headers bounded."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools is not installed
        return "h11"

    class BoundedHeaders(HttpToolsProtocol):
        """httptools, refusing requests whose headers pass the bound (431) instead of buffering them."""

        _header_bytes = 0
        _in_headers = True

        def data_received(self, data: bytes) -> None:
            if self._in_headers:
                self._header_bytes += len(data)
            super().data_received(data)
            if self._in_headers and self._header_bytes > max_header_bytes and not self.transport.is_closing():
                self._refuse()

        def on_headers_complete(self) -> None:
            self._in_headers = False
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._in_headers, self._header_bytes = True, 0

        def _refuse(self) -> None:
            message = f"request headers too large: at most {max_header_bytes} bytes".encode()
            self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; "
                                 b"charset=utf-8\r\ncontent-length: " + str(len(message)).encode() +
                                 b"\r\nconnection: close\r\n\r\n" + message)
            self.transport.close()

    return BoundedHeaders
