"""Pinned heads (dpcalc.ledger_head, odometer --head/--expect-head/--head-file): truncation, rollback,
splice, duplicate, reorder and rewrite are each refused where the README says, and only there."""

import hashlib
import os
import random
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc import ledger as L
from dpcalc import ledger_head as H
from dpcalc.errors import InputError

HEADER = L.Header(1e-6, (1.5, 2.0, 4.0, 8.0, 32.0), "paper")


def text_of(entries, header=HEADER, start=0):
    """A valid ledger's bytes: entries (mechanism texts) chained from the header."""
    lines = [header.line()]
    prev = lines[0]
    for i, m in enumerate(entries, start=start):
        t = f"2026-11-21T20:{i // 60:02d}:{i % 60:02d}Z"
        prev = L.checksum(prev, t, m)
        lines.append(f"{t}\t{m}\t{prev}")
    return ("\n".join(lines) + "\n").encode()


def lines_of(data):
    return data.split(b"\n")[:-1]


def join(lines):
    return b"".join(line + b"\n" for line in lines)


def rechain(lines):
    """Recompute every checksum after the header (what a deliberate rewrite would do)."""
    out = [lines[0]]
    prev = lines[0].decode()
    for line in lines[1:]:
        t, m, _ = line.decode().split("\t")
        prev = L.checksum(prev, t, m)
        out.append(f"{t}\t{m}\t{prev}".encode())
    return out


MECHS = [f"gaussian:sigma={10 + i}" for i in range(6)]


def pinned_ledger(tmp_path, n=4):
    path = tmp_path / "ci.ledger"
    path.write_bytes(text_of(MECHS[:n]))
    return str(path), H.head(L.read(str(path)))


# -- the head ---------------------------------------------------------------------------------
def test_head_is_count_and_sha256_of_the_first_lines_as_head_n_sha256sum(tmp_path):
    path, head = pinned_ledger(tmp_path, 4)
    data = open(path, "rb").read()
    assert head.count == 4
    assert head.digest == hashlib.sha256(join(lines_of(data)[:5])).hexdigest()
    assert str(head) == f"4:{head.digest}"
    assert H.parse_head(f" {head}\n", "--expect-head") == head
    for k in range(5):  # every prefix of the ledger is extended by it
        prefix = H.Head(k, hashlib.sha256(join(lines_of(data)[: k + 1])).hexdigest() if k else H.EMPTY)
        assert H.extends(L.read(path), prefix)


def test_head_does_not_depend_on_line_ends_or_a_byte_order_mark(tmp_path):
    path, head = pinned_ledger(tmp_path, 3)
    lf = open(path, "rb").read()
    for data in (lf.replace(b"\n", b"\r\n"), b"\xef\xbb\xbf" + lf):
        open(path, "wb").write(data)
        assert H.head(L.read(path)) == head


def test_empty_ledger_has_head_zero_which_pins_nothing(tmp_path):
    empty = L.parse(b"")
    assert H.head(empty) == H.Head(0, H.EMPTY)
    _, head = pinned_ledger(tmp_path, 2)
    assert H.extends(L.parse(text_of(["laplace:scale=1"])), H.Head(0, H.EMPTY))
    assert not H.extends(empty, head)


@pytest.mark.parametrize(
    "text",
    ["", "3", "3:", ":" + "a" * 64, "3:" + "a" * 63, "3:" + "A" * 64, "-1:" + "a" * 64, "03:" + "a" * 64,
     "3:" + "a" * 64 + ":x", "3 " + "a" * 64, "1" * 17 + ":" + "a" * 64],
)  # fmt: skip
def test_malformed_heads_are_input_errors_naming_the_option(text):
    with pytest.raises(InputError, match="^--expect-head: not a ledger head"):
        H.parse_head(text, "--expect-head")


# -- what the file alone detects, and what it cannot --------------------------------------------
def test_without_a_pin_truncation_at_the_end_is_not_detectable(tmp_path):
    """The README says so: a truncated ledger, or an older copy, is itself a valid ledger."""
    path, _ = pinned_ledger(tmp_path, 4)
    data = open(path, "rb").read()
    open(path, "wb").write(join(lines_of(data)[:3]))
    assert L.read(path).mechanisms == MECHS[:2]  # valid, and less budget


def _edits(data, other):
    ls = lines_of(data)
    return {
        "truncate-last": join(ls[:-1]),
        "truncate-to-header": join(ls[:1]),
        "empty-file": b"",
        "rollback": text_of(MECHS[:2]),
        "rollback-then-extended": text_of(MECHS[:2] + ["gaussian:sigma=99", "gaussian:sigma=98", "laplace:scale=9"]),
        "replaced-by-another-ledger": other,
        "splice-from-another-ledger": join(ls[:3] + lines_of(other)[3:]),
        "splice-rechained": join(rechain(ls[:3] + lines_of(other)[3:])),
        "duplicate": join(ls[:3] + [ls[2]] + ls[3:]),
        "duplicate-rechained": join(rechain(ls[:3] + [ls[2]] + ls[3:])),
        "reorder": join([ls[0], ls[2], ls[1]] + ls[3:]),
        "reorder-rechained": join(rechain([ls[0], ls[2], ls[1]] + ls[3:])),
        "middle-deleted": join(ls[:2] + ls[3:]),
        "middle-deleted-rechained": join(rechain(ls[:2] + ls[3:])),
        "rewrite-a-value": join(ls[:2] + [ls[2].replace(b"sigma=11", b"sigma=91")] + ls[3:]),
        "rewrite-rechained": join(rechain(ls[:2] + [ls[2].replace(b"sigma=11", b"sigma=91")] + ls[3:])),
        "header-rewritten-rechained": join(rechain([ls[0].replace(b"delta=1e-06", b"delta=1e-05")] + ls[1:])),
    }  # fmt: skip


# what the chain alone refuses (exit 1 without a pin); every other edit leaves a valid ledger
CHAIN_DETECTS = {"splice-from-another-ledger", "duplicate", "reorder", "middle-deleted", "rewrite-a-value"}
EDITS = sorted(_edits(text_of(MECHS[:4]), text_of(["laplace:scale=1"] * 4)))


@pytest.mark.parametrize("edit", EDITS)
def test_every_edit_is_refused_with_a_pin_and_only_in_the_middle_without(tmp_path, edit):
    path, head = pinned_ledger(tmp_path, 4)
    changed = _edits(open(path, "rb").read(), text_of(["laplace:scale=1"] * 4, start=7))[edit]
    open(path, "wb").write(changed)
    if edit in CHAIN_DETECTS:
        with pytest.raises(L.LedgerDamaged, match="line"):
            L.read(path)
    else:
        L.read(path)  # the file alone looks fine: only the pin can tell
    pins = H.Pins(expect=head)
    with pytest.raises((L.LedgerDamaged, H.LedgerRolledBack)):
        L.read(path, pins)
    with pytest.raises((L.LedgerDamaged, H.LedgerRolledBack)):
        L.append(path, "gaussian:sigma=3", HEADER, pins=H.Pins(expect=head))
    assert open(path, "rb").read() == changed  # never rewritten, nothing appended
    assert pins.head is None  # nothing recorded


def test_a_deleted_ledger_is_refused_when_a_head_pins_entries(tmp_path):
    path, head = pinned_ledger(tmp_path, 2)
    os.unlink(path)
    with pytest.raises(H.LedgerRolledBack, match="does not exist, but --expect-head 2:.* pins 2 entries"):
        L.read(path, H.Pins(expect=head))
    with pytest.raises(H.LedgerRolledBack, match="deleted or moved"):
        L.append(path, "gaussian:sigma=3", HEADER, pins=H.Pins(expect=head))
    assert not os.path.exists(path)
    L.append(path, "gaussian:sigma=3", HEADER, pins=H.Pins(expect=H.Head(0, H.EMPTY)))  # 0 pins nothing


def test_the_messages_say_what_happened(tmp_path):
    path, head = pinned_ledger(tmp_path, 4)
    data = open(path, "rb").read()
    open(path, "wb").write(join(lines_of(data)[:3]))
    with pytest.raises(H.LedgerRolledBack) as exc:
        L.read(path, H.Pins(expect=head))
    assert str(exc.value) == (
        f"ledger {path} has 2 entries, fewer than the 4 of --expect-head {head}: it was truncated or "
        "rolled back to an older copy; the file was not changed"
    )
    open(path, "wb").write(text_of(MECHS[:2] + ["laplace:scale=1"] * 3))
    with pytest.raises(H.LedgerRolledBack) as exc:
        L.read(path, H.Pins(expect=head))
    assert str(exc.value).startswith(
        f"ledger {path}: its first 4 entries are not those of --expect-head {head}"
    )
    open(path, "wb").write(join(lines_of(data)[:4]) + lines_of(data)[4][:10])  # the pinned last line torn
    with pytest.raises(H.LedgerRolledBack, match="has 3 entries \\(not counting its incomplete last line\\)"):
        L.read(path, H.Pins(expect=head))


def test_an_extended_ledger_passes_and_the_new_head_is_recorded(tmp_path):
    path, head = pinned_ledger(tmp_path, 2)
    pins = H.Pins(expect=head)
    _, written = L.append(path, "gaussian:sigma=3", None, pins=pins, time="2026-11-22T00:00:00Z")
    assert written and pins.head == H.head(L.read(path)) and pins.head.count == 3
    assert H.extends(L.read(path), head) and H.extends(L.read(path), pins.head)
    refused = H.Pins(expect=pins.head)
    before = open(path, "rb").read()
    _, written = L.append(path, "gaussian:sigma=0.1", None, lambda h, ms: False, pins=refused)
    assert not written and refused.head == pins.head and open(path, "rb").read() == before


def test_a_torn_last_line_does_not_change_the_head_and_repair_keeps_it(tmp_path):
    path, head = pinned_ledger(tmp_path, 3)
    with open(path, "ab") as fh:
        fh.write(b"2026-11-21T21:00:00Z\tgauss")
    assert H.head(L.read(path)) == head
    L.repair(path)
    assert H.head(L.read(path)) == head


# -- brute force: random edits to a ledger file ---------------------------------------------------
def _random_edit(rng, ls, other):
    ls = list(ls)
    op = rng.choice(["truncate", "delete", "duplicate", "swap", "rewrite", "splice", "insert", "append"])
    body = range(1, len(ls))
    if op == "truncate":
        del ls[rng.randint(1, len(ls)) :]
    elif op == "delete" and len(ls) > 1:
        del ls[rng.choice(body)]
    elif op == "duplicate" and len(ls) > 1:
        i = rng.choice(body)
        ls.insert(rng.randint(1, len(ls)), ls[i])
    elif op == "swap" and len(ls) > 2:
        i, j = rng.sample(body, 2)
        ls[i], ls[j] = ls[j], ls[i]
    elif op == "rewrite" and len(ls) > 1:
        i = rng.choice(body)
        t, m, s = ls[i].split(b"\t")
        ls[i] = b"\t".join([t, m + b"1" if rng.random() < 0.5 else m.replace(b"sigma=", b"sigma=9"), s])
    elif op == "splice":
        k = rng.randint(1, len(other) - 1)
        ls[k:] = other[k:]
    elif op == "insert":
        ls.insert(rng.randint(1, len(ls)), rng.choice(other[1:]))
    else:  # an honest append: extends every pin
        t, m = f"2026-11-23T00:00:{len(ls):02d}Z", "gaussian:sigma=50"
        prev = ls[-1].split(b"\t")[-1].decode() if len(ls) > 1 else ls[0].decode()
        ls.append(f"{t}\t{m}\t{L.checksum(prev, t, m)}".encode())
    return rechain(ls) if rng.random() < 0.5 and ls else ls


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3))
def test_random_edits_pass_a_pin_iff_the_pinned_entries_are_intact(seed, steps):
    rng = random.Random(seed)
    original = lines_of(text_of(MECHS[:5]))
    other = lines_of(text_of(["laplace:scale=2"] * 6, start=30))
    n = rng.randint(0, 5)
    pin = H.Head(n, H.digests(L.parse(join(original)), {n})[n])
    ls = original
    for _ in range(steps):
        ls = _random_edit(rng, ls, other)
    data = join(ls)
    intact = ls[: n + 1] == original[: n + 1] if n else True
    try:
        led = L.parse(data)
        H.Pins(expect=pin).check(led, "x")
    except (L.LedgerDamaged, H.LedgerRolledBack) as exc:
        # refused: the pinned entries were changed, or the chain is broken after them
        assert not intact or isinstance(exc, L.LedgerDamaged)
        return
    assert intact, "an edit of pinned entries passed"
    assert led.mechanisms[:n] == MECHS[:n]


# -- the head file ---------------------------------------------------------------------------
def test_head_file_is_read_checked_and_replaced(tmp_path):
    path, head = pinned_ledger(tmp_path, 2)
    hf = str(tmp_path / "ci.head")
    pins = H.Pins(head_file=hf)
    L.read(path, pins)  # no head file yet: pins nothing, then records the head
    assert open(hf).read() == f"{head}\n"
    L.append(path, "gaussian:sigma=3", None, pins=H.Pins(head_file=hf))
    new = H.head(L.read(path))
    assert open(hf).read() == f"{new}\n" and new.count == 3
    shutil.copy(path, tmp_path / "old")
    L.append(path, "gaussian:sigma=4", None, pins=H.Pins(head_file=hf))
    newer = open(hf).read()
    shutil.copy(tmp_path / "old", path)  # a cache restores the older copy
    with pytest.raises(H.LedgerRolledBack, match=f"fewer than the 4 of the head in --head-file {hf}"):
        L.append(path, "gaussian:sigma=5", None, pins=H.Pins(head_file=hf))
    assert open(hf).read() == newer and len(L.read(path).entries) == 3
    dry = H.Pins(head_file=str(tmp_path / "dry.head"), write=False)
    L.read(path, dry)
    assert dry.head == new and not os.path.exists(tmp_path / "dry.head")
    assert sorted(os.listdir(tmp_path)) == ["ci.head", "ci.ledger", "old"]  # no temporary files left


def test_a_new_ledger_records_its_head_and_a_refused_one_writes_nothing(tmp_path):
    path, hf = str(tmp_path / "new.ledger"), str(tmp_path / "new.head")
    pins = H.Pins(head_file=hf)
    _, ok = L.append(path, "gaussian:sigma=1", HEADER, lambda h, ms: False, pins=pins)
    assert not ok and pins.head == H.Head(0, H.EMPTY) and os.listdir(tmp_path) == []
    L.append(path, "gaussian:sigma=1", HEADER, pins=pins)
    assert pins.head == H.head(L.read(path)) and open(hf).read() == f"{pins.head}\n"


@pytest.mark.parametrize(
    "content, message",
    [(b"", "not a ledger head"), (b"junk\n", "not a ledger head"), (b"\xff\n", "not UTF-8"), (b"1" * 5000, "over")],
)  # fmt: skip
def test_a_bad_head_file_is_an_input_error(tmp_path, content, message):
    hf = tmp_path / "ci.head"
    hf.write_bytes(content)
    with pytest.raises(InputError, match=f"--head-file {hf}: .*{message}"):
        H.check_head_file(str(hf))


def test_a_head_file_in_a_missing_directory_or_a_directory_is_refused_up_front(tmp_path):
    with pytest.raises(InputError, match="no such directory|cannot"):
        H.check_head_file(str(tmp_path / "nowhere" / "ci.head"))
    with pytest.raises(InputError, match="directory"):
        H.check_head_file(str(tmp_path))


def test_a_head_file_that_cannot_be_replaced_says_the_head(tmp_path, monkeypatch):
    path, head = pinned_ledger(tmp_path, 2)

    def fail(*a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(H.os, "replace", fail)
    with pytest.raises(H.HeadNotWritten, match=f"cannot write the ledger's head {head} \\(no space left"):
        L.read(path, H.Pins(head_file=str(tmp_path / "ci.head")))
    assert sorted(os.listdir(tmp_path)) == ["ci.ledger"]
