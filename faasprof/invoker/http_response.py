"""HTTP/1.1 responses read incrementally, one parser per request, for the send path (``sender``).

Two parsers frame a response exactly alike (RFC 9112 message framing; ``tests/test_invoker_http.py``
holds them to each other): ``LlhttpResponse`` on llhttp, Node.js's parser (``httptools``), which
costs less CPU per response, and ``PyResponse`` in pure Python for where httptools is missing.
``Response`` is the one the sender uses. Each keeps only what a row needs: the status, whether
the connection closes, the ``x-openwhisk-activation-id`` header and the body.
"""

from __future__ import annotations

from typing import Protocol

try:  # llhttp, the parser of Node.js: exact framing at less CPU per response than pure Python
    import httptools
except ImportError:  # pragma: no cover - the pure-Python parser below is exact too
    HAVE_LLHTTP = False
else:
    HAVE_LLHTTP = True

MAX_HEAD_BYTES = 64 * 1024  # a response head longer than this is not an OpenWhisk answer


class PyResponse:
    """Incremental HTTP/1.1 response parser for one request (RFC 9112 message framing), pure Python.

    The body's length is decided as RFC 9112 §6.3 says: none for a response to HEAD and for
    1xx, 204 and 304; chunked when the last transfer coding is ``chunked`` (chunk extensions and
    trailer fields are read and dropped); else ``Content-Length``; else until the server closes
    the connection. Interim 1xx responses are skipped. As strict as llhttp: a repeated
    Content-Length, or one beside Transfer-Encoding, is refused. A malformed message raises
    ValueError (the connection is then dropped).
    """

    __slots__ = (
        "buf",
        "status",
        "head",
        "length",
        "chunked",
        "close",
        "body_start",
        "head_request",
        "activation_id",
        "_pos",
        "_body",
        "_state",
        "_size",
    )

    def __init__(self, head_request: bool = False) -> None:
        self.buf = bytearray()
        self.status = 0
        self.head: bytes | None = None
        self.length = -1  # -1: unknown (chunked or until close)
        self.chunked = False
        self.close = False
        self.body_start = 0
        self.head_request = head_request
        self.activation_id: str | None = None
        self._pos = 0  # chunked: where decoding stands in buf
        self._body = bytearray()  # chunked: the body decoded so far
        self._state = 0  # chunked: 0 size line, 1 data, 2 trailer section
        self._size = 0

    def feed(self, data: bytes) -> bytes | None:
        """Add bytes; return the body once the response is complete, else None."""
        buf = self.buf
        buf += data
        while self.head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD_BYTES:
                    raise ValueError("response head too long")
                return None
            if not self._parse_head(bytes(buf[:end])):
                del buf[: end + 4]  # an interim 1xx response: the real one follows
                continue
            self.body_start = end + 4
        if self.length >= 0:
            if len(buf) - self.body_start >= self.length:
                if len(buf) - self.body_start > self.length:
                    self.close = True  # bytes nobody asked for: do not reuse the connection
                return bytes(buf[self.body_start : self.body_start + self.length])
            return None
        if self.chunked:
            return self._dechunk()
        return None  # body until the connection closes

    def _parse_head(self, head: bytes) -> bool:
        """Read the status line and the framing headers; False for an interim 1xx response."""
        lines = head.split(b"\r\n")
        status_line = lines[0]
        if (
            not status_line.startswith(b"HTTP/1.")
            or len(status_line) < 12
            or status_line[12:13] not in (b"", b" ")
            or not status_line[9:12].isdigit()
        ):
            raise ValueError(f"bad status line {status_line[:40]!r}")
        status = int(status_line[9:12])
        if 100 <= status < 200 and status != 101:
            return False
        lengths, codings, connection, activation_id = [], b"", b"", None
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or not name or name[-1:] in (b" ", b"\t"):
                raise ValueError(f"bad header line {line[:40]!r}")
            name = name.lower()
            if name == b"content-length":
                lengths.append(value.strip())
            elif name == b"transfer-encoding":
                codings += b"," + value
            elif name == b"connection":
                connection += b"," + value.lower()
            elif name == b"x-openwhisk-activation-id":
                activation_id = value.strip().decode("latin-1") or None
        self.head = head.lower()
        self.status = status
        self.activation_id = activation_id
        tokens = {token.strip() for token in connection.split(b",")}
        self.close = b"close" in tokens or (status_line.startswith(b"HTTP/1.0") and b"keep-alive" not in tokens)
        if self.head_request or status in (101, 204, 304):
            self.length = 0
            return True
        if codings and lengths:
            # Both framings in one message is how responses are smuggled (RFC 9112 §6.3): refused, as llhttp does.
            raise ValueError("both Transfer-Encoding and Content-Length")
        if codings:
            last = codings.rsplit(b",", 1)[-1].strip().lower()
            if last == b"chunked":
                self.chunked = True
                self._body = bytearray()
            else:
                self.close = True  # not chunked last: the body runs until the connection closes
            return True
        if lengths:
            if len(lengths) > 1 or not lengths[0].isdigit():  # duplicates refused, as llhttp does
                raise ValueError(f"bad Content-Length {lengths!r}")
            self.length = int(lengths.pop())
        return True

    def _dechunk(self) -> bytes | None:
        buf, pos, body = self.buf, self._pos or self.body_start, self._body
        while True:
            if self._state == 0:  # chunk-size [; extensions] CRLF
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    self._pos = pos
                    return None
                size_text = bytes(buf[pos:end]).split(b";", 1)[0].strip()
                if not size_text or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
                    raise ValueError(f"bad chunk size {size_text[:20]!r}")
                self._size = int(size_text, 16)
                pos = end + 2
                self._state = 2 if self._size == 0 else 1
            elif self._state == 1:  # chunk-data CRLF
                size = self._size
                if len(buf) < pos + size + 2:
                    self._pos = pos
                    return None
                if buf[pos + size : pos + size + 2] != b"\r\n":
                    raise ValueError("chunk not followed by CRLF")
                body += buf[pos : pos + size]
                pos += size + 2
                self._state = 0
            else:  # trailer fields, then an empty line
                end = buf.find(b"\r\n", pos)
                if end < 0:
                    self._pos = pos
                    return None
                if end == pos:
                    if len(buf) > end + 2:
                        self.close = True
                    return bytes(body)
                pos = end + 2

    def header(self, name: bytes) -> str | None:
        if name == b"x-openwhisk-activation-id":
            return self.activation_id
        if self.head is None:
            return None
        for line in self.head.split(b"\r\n")[1:]:
            key, _, value = line.partition(b":")
            if key == name:
                return value.strip().decode("latin-1") or None
        return None

    def until_close_body(self) -> bytes | None:
        """At the end of the connection: the body when it was delimited by that end, else None."""
        if self.head is not None and self.length < 0 and not self.chunked:
            return bytes(self.buf[self.body_start :])
        return None


class LlhttpResponse:
    """The same parser on llhttp (``httptools``): C framing, a few Python callbacks per response.

    Measured with ``bench/bench_invoker.py --parsers``: it costs less CPU per response than the
    pure-Python parser above while being exact, so it is used whenever httptools is installed.
    The interface is ``PyResponse``'s (``feed``, ``status``, ``close``, ``activation_id``,
    ``head``, ``until_close_body``).
    """

    __slots__ = (
        "parser",
        "status",
        "head",
        "close",
        "head_request",
        "activation_id",
        "_body",
        "_done",
        "_framed",
        "_extra",
    )

    def __init__(self, head_request: bool = False) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.head: bytes | None = None  # b"" once the head is complete (the headers are not kept)
        self.close = False
        self.head_request = head_request
        self.activation_id: str | None = None
        self._body: list[bytes] = []
        self._done = False
        self._framed = False  # Content-Length or Transfer-Encoding seen: the body does not run to the close
        self._extra = False

    # llhttp callbacks
    def on_message_begin(self) -> None:
        if self._done:  # bytes after the answer: nobody asked for them
            self._extra = True

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"x-openwhisk-activation-id":
            self.activation_id = value.strip().decode("latin-1") or None
        elif name in (b"content-length", b"transfer-encoding"):
            self._framed = True

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            return  # an interim response: llhttp completes it and parses the real one next
        self.status = status
        self.head = b""
        # Read here: llhttp resets its flags once the message is complete.
        self.close = not self.parser.should_keep_alive()
        if self.head_request:
            # llhttp cannot be told the request was HEAD: the message ends here (this parser is
            # used for one response only, so the Content-Length it announced is never read).
            self._done = True

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self.head is None or self._extra:  # the end of an interim 1xx response, or of extra bytes
            return
        self._done = True

    def feed(self, data: bytes) -> bytes | None:
        if self._done:
            self._extra = True
            self.close = True
            return None
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass  # a 101: nothing we asked for; the body (none) ends here
        except httptools.HttpParserError as error:
            if not (self._done and self.head_request):
                raise ValueError(str(error)) from None
        if not self._done:
            return None
        self.close = self.close or self._extra or self.head_request
        return b"".join(self._body) if not self.head_request else b""

    def until_close_body(self) -> bytes | None:
        if self.head is not None and not self._framed and not self._done and self.status not in (204, 304):
            return b"".join(self._body)
        return None

    def header(self, name: bytes) -> str | None:
        return self.activation_id if name == b"x-openwhisk-activation-id" else None


class ResponseParser(Protocol):
    """What the sender reads of a response, whichever parser reads it."""

    status: int
    close: bool
    activation_id: str | None
    head: bytes | None

    def feed(self, data: bytes) -> bytes | None: ...

    def until_close_body(self) -> bytes | None: ...


Response: type[PyResponse] | type[LlhttpResponse] = LlhttpResponse if HAVE_LLHTTP else PyResponse
