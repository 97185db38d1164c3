"""dpcalc.input.text, the one reader of every text input: BOM, line ends, UTF-8 errors, bounds,
streaming, files that are not files."""

import io
import os
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcalc.errors import InputError
from dpcalc.input import opening
from dpcalc.input import text as T


def lines_of(data: bytes, chunk: int | None = None, name="IN"):
    """All lines of ``data`` fed in chunks of ``chunk`` bytes (all at once if None)."""
    sp = T.LineSplitter(name)
    out = []
    step = chunk or max(1, len(data))
    for i in range(0, len(data), step):
        out += sp.feed(data[i : i + step])
        sp.check()
    last = sp.finish()
    return out + ([last] if last else [])


# -- BOM and line ends ------------------------------------------------------------------------------
@pytest.mark.parametrize("chunk", [None, 1, 2, 3, 5])
@pytest.mark.parametrize("bom", [b"", T.BOM])
@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_bom_and_every_line_end_read_alike(chunk, bom, end):
    data = bom + end.join([b"alpha,rdp", b"2,0.5", "4,1 # é".encode()]) + end
    assert lines_of(data, chunk) == ["alpha,rdp\n", "2,0.5\n", "4,1 # é\n"]


def test_mixed_line_ends_and_a_last_line_without_one():
    assert lines_of(b"a\r\nb\rc\nd") == ["a\n", "b\n", "c\n", "d"]
    assert lines_of(b"a\r\r\nb") == ["a\n", "\n", "b"]  # CR, then CRLF: two line ends


def test_only_a_leading_bom_is_dropped():
    assert lines_of(T.BOM) == []
    assert lines_of(T.BOM + b"x\n" + T.BOM + b"y\n") == ["x\n", "\ufeffy\n"]


@given(
    st.lists(
        st.text(alphabet=st.characters(blacklist_characters="\r\n\x00\ufeff", blacklist_categories=("Cs",))),
        max_size=6,
    )
)
def test_any_chunking_gives_the_same_lines(texts):
    data = "".join(t + "\r\n" for t in texts).encode()
    whole = lines_of(data)
    assert whole == [t + "\n" for t in texts]
    for chunk in (1, 2, 7):
        assert lines_of(data, chunk) == whole


# -- bytes that are not text ------------------------------------------------------------------------
def test_not_utf8_names_the_input_and_the_byte_offset():
    with pytest.raises(InputError) as info:
        lines_of(b"alpha,rdp\n2,0.5\n4,\xff1\n", name="--curve data.csv")
    assert str(info.value) == "--curve data.csv: byte 18 is not UTF-8 (0xff) on line 3"


def test_offsets_count_the_bom_and_hold_across_chunks():
    data = T.BOM + b"ab\r\ncd\xc3"  # a truncated two-byte sequence at the very end
    for chunk in (None, 1, 4):
        with pytest.raises(InputError, match=r"IN: byte 9 is not UTF-8 \(0xc3\) on line 2"):
            lines_of(data, chunk)


def test_nul_byte_is_refused_after_the_lines_before_it():
    sp = T.LineSplitter("IN")
    assert sp.feed(b"a\nb\n\x00c\n") == ["a\n", "b\n"]
    with pytest.raises(InputError, match="IN: byte 4 is a NUL byte on line 3"):
        sp.check()


def test_good_lines_before_a_bad_byte_still_come_out():
    it = T.iter_lines(io.BytesIO(b"x\ny\n\xfe\n"), "IN")
    assert next(it) == "x\n" and next(it) == "y\n"
    with pytest.raises(InputError, match="byte 4 is not UTF-8"):
        next(it)


# -- bounds -------------------------------------------------------------------------------------------
def test_a_line_longer_than_the_bound_fails_before_it_is_complete():
    sp = T.LineSplitter("IN", max_line=10)
    assert sp.feed(b"ok\n0123456789") == ["ok\n"]
    with pytest.raises(InputError, match="IN line 2: the line is longer than 10 bytes"):
        sp.feed(b"x")


def test_the_default_bound_is_1_mib():
    assert T.MAX_LINE_BYTES == 1 << 20 and T.MAX_FIELD_CHARS == 100_000
    with pytest.raises(InputError, match="longer than 1048576 bytes"):
        list(T.iter_lines(io.BytesIO(b"y" * (T.MAX_LINE_BYTES + 1)), "IN"))
    assert len(next(T.iter_lines(io.BytesIO(b"y" * T.MAX_LINE_BYTES + b"\n"), "IN"))) == T.MAX_LINE_BYTES + 1


class Endless(io.RawIOBase):
    """An endless stream of one byte, counting what was read (like ``yes | tr -d '\\n'``)."""

    def __init__(self, byte=b"y"):
        self.byte, self.read_bytes = byte, 0

    def readable(self):
        return True

    def readinto(self, b):
        b[:] = self.byte * len(b)
        self.read_bytes += len(b)
        return len(b)


def test_an_endless_line_is_read_boundedly():
    src = Endless()
    with pytest.raises(InputError, match="longer than"):
        list(T.iter_lines(src, "IN"))
    assert src.read_bytes <= T.MAX_LINE_BYTES + 2 * T.CHUNK


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_fails_at_once():
    with pytest.raises(InputError, match="/dev/zero: byte 0 is a NUL byte"):
        T.read_lines("/dev/zero", "/dev/zero")


def test_csv_fields_are_bounded():
    ok = "a,b\n" + "x" * T.MAX_FIELD_CHARS + ",1\n"
    assert [r for _, r in T.csv_records(ok.splitlines(True), "IN")][1][0] == "x" * T.MAX_FIELD_CHARS
    for size in (T.MAX_FIELD_CHARS + 1, 200_000):
        text = "a,b\n1," + "7" * size + "\n"
        with pytest.raises(InputError, match="IN line 2: a field is longer than 100000 characters"):
            list(T.csv_records(text.splitlines(True), "IN"))
    runaway = ["a,b\n", '1,"' + "z" * 60_000 + "\n", "z" * 60_000 + "\n", "z" * 60_000 + '"\n']
    with pytest.raises(InputError, match="IN line 2: a field is longer"):
        list(T.csv_records(runaway, "IN"))


def test_malformed_csv_names_the_line():
    with pytest.raises(InputError, match=r"IN line 2: malformed CSV"):
        list(T.csv_records(["a,b\n", '1,"x"y\n'], "IN", strict=True))


# -- opening ---------------------------------------------------------------------------------------------
def test_missing_file_missing_directory_and_a_directory(tmp_path):
    cases = [
        (tmp_path / "nope.csv", "X: cannot read: no such file"),
        (tmp_path / "nodir" / "x.csv", f"X: cannot read: no such directory '{tmp_path / 'nodir'}'"),
        (tmp_path, "X: cannot read: it is a directory"),
    ]
    (tmp_path / "plain").write_text("x")
    cases.append((tmp_path / "plain" / "x.csv", "is not a directory"))
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    cases.append((tmp_path / "dangling", "symbolic link to a file that does not exist"))
    for path, message in cases:
        with pytest.raises(InputError) as info:
            T.read_lines(str(path), "X")
        assert message in str(info.value), str(info.value)


def test_unreadable_file(tmp_path):
    path = tmp_path / "secret.csv"
    path.write_text("a\n")
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("permissions are not enforced (running as root)")
        with pytest.raises(InputError, match="X: cannot read: permission denied"):
            T.read_lines(str(path), "X")
    finally:
        path.chmod(0o600)


def test_regular_only_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = {}

    def probe():
        try:
            opening.open_fd(str(fifo), "X", os.O_RDWR, regular=True, action="write")
        except InputError as exc:
            result["error"] = str(exc)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout=10)
    assert not t.is_alive(), "opening a FIFO blocked"
    assert result["error"] == "X: cannot write: it is a FIFO (named pipe), not a regular file"


def test_a_fifo_is_read_as_a_stream(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as fh:
            fh.write(T.BOM + b"alpha,rdp\r\n2,0.5\r\n")

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    got = {}
    reader = threading.Thread(target=lambda: got.update(lines=T.read_lines(str(fifo), "X")), daemon=True)
    reader.start()
    reader.join(timeout=20)
    t.join(timeout=5)
    assert not reader.is_alive(), "reading the FIFO hung"
    assert got["lines"] == ["alpha,rdp\n", "2,0.5\n"]


def test_text_streams_are_read_through_their_bytes():
    stdin = io.TextIOWrapper(io.BytesIO(T.BOM + b"a\r\nb\n"), encoding="latin-1")
    assert list(T.iter_lines(opening.binary_stream(stdin), "-")) == ["a\n", "b\n"]
    assert list(T.iter_lines(opening.binary_stream(io.StringIO("x\r\ny")), "-")) == ["x\n", "y"]


def test_follow_reads_a_growing_file_with_a_bom_and_crlf(tmp_path):
    path = tmp_path / "log.csv"
    path.write_bytes(T.BOM + b"a,b\r\n1,")
    done = []
    it = T.follow_lines(str(path), "LOG", poll=0.01, stop=lambda: bool(done))
    assert next(it) == "a,b\n"
    with open(path, "ab") as fh:
        fh.write(b"2\r\n3,4")
    assert next(it) == "1,2\n"
    done.append(True)
    assert list(it) == ["3,4"]


# -- a closed standard input --------------------------------------------------------------------------
def test_closed_stdin_is_one_line_naming_the_input(monkeypatch):
    monkeypatch.setattr("sys.stdin", None)  # what Python sets when fd 0 is closed (`<&-`)
    with pytest.raises(InputError, match=r"^--curve -: cannot read standard input: it is closed$"):
        T.read_lines("-", "--curve -")
    closed = io.StringIO("alpha,rdp\n")
    closed.close()
    with pytest.raises(InputError, match="MECHANISM -: cannot read standard input: it is closed"):
        T.read_lines("-", "MECHANISM -", closed)


def test_a_stream_closed_while_read_is_one_line():
    class ClosedAfterOpen(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, b):
            raise ValueError("I/O operation on closed file")

    with pytest.raises(InputError, match="^IN: cannot read: the input is closed$"):
        list(T.iter_lines(ClosedAfterOpen(), "IN"))


def test_stdin_open_for_writing_only_is_one_line(tmp_path):
    fd = os.open(tmp_path / "w", os.O_WRONLY | os.O_CREAT)
    try:
        with (
            open(fd, "rb", buffering=0, closefd=False) as fh,
            pytest.raises(InputError, match="^IN: cannot read: it is not open for reading$"),
        ):
            list(T.iter_lines(fh, "IN"))
    finally:
        os.close(fd)


def _split_all(chunks, bulk: bool, max_line=64):
    """The lines (or the error) of ``chunks`` fed to a LineSplitter, with or without the bulk split."""
    sp = T.LineSplitter("in", max_line=max_line)
    if not bulk:
        sp._split_bulk = lambda pos: None
    out = []
    try:
        for c in chunks:
            out += sp.feed(c)
            sp.check()
        out.append(sp.finish())
    except InputError as exc:
        out.append(("error", str(exc)))
    return out, sp.lines


@given(
    st.lists(
        st.lists(
            st.sampled_from([b"a", b"bc,1", b"\n", b"\r", b"\r\n", b"\xc3\xa9", b"\xc3", b"\xff", b"x" * 40]),
            max_size=12,
        ).map(b"".join),
        max_size=8,
    )
)
def test_the_bulk_split_gives_the_lines_one_by_one_gives(chunks):
    """LineSplitter splits the complete lines of a chunk at once where they are plain; the lines, the line
    count and any error (with its line and byte) are those of the line-by-line loop, whatever the chunks."""
    assert _split_all(chunks, True) == _split_all(chunks, False)
