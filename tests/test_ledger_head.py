"""Pinned heads (dpcalc.ledger.head, odometer --head/--expect-head/--head-file): truncation, rollback,
splice, duplicate, reorder and rewrite are each refused where the guide says (docs/guide/odometer.md), and only
there."""

import hashlib
import os
import random
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.errors import InputError
from dpcalc.ledger import file as L
from dpcalc.ledger import head as H

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
    """The guide says so (docs/guide/odometer.md): a truncated ledger, or an older copy, is itself a valid ledger."""
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


# -- through the command line -------------------------------------------------------------------
def one_error(res, code, *fragments):
    assert res.exit_code == code, res.stderr
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), res.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


def cli_ledger(invoke, tmp_path, n=4):
    path = str(tmp_path / "ci.ledger")
    heads = []
    for i in range(n):
        args = [
            "odometer",
            "--ledger",
            path,
            "--add",
            f"gaussian:sigma={10 + i}",
            "--delta",
            "1e-6",
            "--head",
        ]
        res = invoke(args)
        assert res.exit_code == 0 and res.stderr == "", res.stderr
        heads.append(res.stdout.strip())
    return path, heads


def test_add_head_prints_the_new_head_and_head_alone_the_current_one(invoke, tmp_path):
    path, heads = cli_ledger(invoke, tmp_path, 3)
    assert [h.split(":")[0] for h in heads] == ["1", "2", "3"]
    assert heads[-1] == str(H.head(L.read(path)))
    res = invoke(["odometer", "--ledger", path, "--head"])
    assert res.exit_code == 0 and res.stdout == heads[-1] + "\n" and res.stderr == ""
    for h in heads:  # the ledger extends every head it had
        res = invoke(["odometer", "--ledger", path, "--expect-head", h, "-f", "csv"])
        assert res.exit_code == 0 and len(res.stdout.splitlines()) == 4, res.stderr


MODES = {
    "report": ["-f", "csv"],
    "head": ["--head"],
    "add": ["--add", "gaussian:sigma=3", "-q"],
    "check": ["--add", "gaussian:sigma=3", "--check", "-q"],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("edit", ["truncate-last", "rollback", "replaced-by-another-ledger", "rewrite-rechained",
                                  "duplicate-rechained", "reorder-rechained", "rollback-then-extended"])  # fmt: skip
def test_cli_refuses_a_ledger_that_does_not_extend_the_head_with_exit_1(invoke, tmp_path, mode, edit):
    path, heads = cli_ledger(invoke, tmp_path, 4)
    data = open(path, "rb").read()
    other = text_of(["laplace:scale=1"] * 4, start=7)
    changed = {**_edits(data, other), "rollback": join(lines_of(data)[:3])}[edit]
    open(path, "wb").write(changed)
    assert invoke(["odometer", "--ledger", path, "--head"]).exit_code == 0  # unpinned, it passes
    res = invoke(["odometer", "--ledger", path, "--expect-head", heads[-1], *MODES[mode]])
    want = (
        "fewer than the 4 of --expect-head"
        if edit in ("truncate-last", "rollback")
        else "its first 4 entries"
    )
    one_error(res, 1, f"ledger {path}", want, "the file was not changed")
    assert open(path, "rb").read() == changed


@pytest.mark.parametrize("edit", sorted(CHAIN_DETECTS))
def test_cli_chain_damage_is_exit_1_with_or_without_a_head(invoke, tmp_path, edit):
    path, heads = cli_ledger(invoke, tmp_path, 4)
    changed = _edits(open(path, "rb").read(), text_of(["laplace:scale=1"] * 4, start=7))[edit]
    open(path, "wb").write(changed)
    for pin in ([], ["--expect-head", heads[-1]], ["--expect-head", heads[0]]):
        one_error(invoke(["odometer", "--ledger", path, *pin]), 1, "checksum mismatch", "not changed")
    assert open(path, "rb").read() == changed


def test_cli_deleted_ledger_with_a_head_is_exit_1_and_nothing_is_created(invoke, tmp_path):
    path, heads = cli_ledger(invoke, tmp_path, 2)
    os.unlink(path)
    for args in ([], ["--add", "gaussian:sigma=3", "--delta", "1e-6"], ["--add", "gaussian:sigma=3"]):
        res = invoke(["odometer", "--ledger", path, "--expect-head", heads[-1], *args])
        one_error(res, 1, f"ledger {path} does not exist", "pins 2 entries", "deleted or moved")
    assert not os.path.exists(path)


def test_cli_head_file_follows_the_ledger_and_catches_a_restored_cache(invoke, tmp_path):
    path, hf = str(tmp_path / "ci.ledger"), str(tmp_path / "ci.head")
    add = ["odometer", "--ledger", path, "--head-file", hf, "-q", "--add"]
    assert invoke([*add, "gaussian:sigma=10", "--delta", "1e-6"]).exit_code == 0
    assert open(hf).read() == f"{H.head(L.read(path))}\n"
    shutil.copy(path, tmp_path / "cache")
    assert invoke([*add, "gaussian:sigma=11"]).exit_code == 0
    kept = open(hf).read()
    assert kept == f"{H.head(L.read(path))}\n" and kept.startswith("2:")
    check = invoke([*add, "gaussian:sigma=12", "--check"])  # asks, writes nothing
    assert check.exit_code == 0 and open(hf).read() == kept
    shutil.copy(tmp_path / "cache", path)  # the CI cache restores the older ledger
    restored = open(path, "rb").read()
    for args in ([*add, "gaussian:sigma=12"], ["odometer", "--ledger", path, "--head-file", hf]):
        one_error(
            invoke(args), 1, "has 1 entries, fewer than the 2 of the head in --head-file", "rolled back"
        )
    assert open(hf).read() == kept and open(path, "rb").read() == restored


def test_cli_budget_refusal_with_head_prints_the_unchanged_head(invoke, tmp_path):
    path, heads = cli_ledger(invoke, tmp_path, 2)
    before = open(path, "rb").read()
    res = invoke(["odometer", "--ledger", path, "--add", "gaussian:sigma=0.1", "--max-epsilon", "2", "--head",
                  "--expect-head", heads[-1]])  # fmt: skip
    assert res.exit_code == 3 and res.stdout == heads[-1] + "\n" and "not recorded" in res.stderr
    assert open(path, "rb").read() == before


def test_cli_head_of_a_ledger_with_a_torn_line_warns(invoke, tmp_path):
    path, heads = cli_ledger(invoke, tmp_path, 2)
    with open(path, "ab") as fh:
        fh.write(b"2026-11-21T21:00:00Z\tgauss")
    res = invoke(["odometer", "--ledger", path, "--head", "--expect-head", heads[-1]])
    assert res.exit_code == 0 and res.stdout == heads[-1] + "\n"
    assert res.stderr.startswith("Warning: ") and "incomplete append" in res.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["--head", "--add", "gaussian:sigma=1", "--check"], "--head cannot be used with --check"),
        (["--head", "-f", "json"], "-f cannot be used with --head"),
        (["--head", "--columns", "epsilon"], "--columns cannot be used with --head"),
        (["--head", "--max-epsilon", "1"], "--max-epsilon cannot be used with --head without --add"),
        (["--head", "--repair"], "--head cannot be used with --repair"),
        (["--expect-head", "2:" + "0" * 64, "--repair"], "--expect-head cannot be used with --repair"),
        (["--expect-head", ""], "--expect-head: not a ledger head"),
        (["--expect-head", "2:abc"], "--expect-head: not a ledger head"),
        (["--head-file", "nowhere/x.head"], "--head-file nowhere/x.head: cannot read: no such directory"),
    ],
)
def test_cli_head_usage_errors_exit_2_and_leave_the_files_alone(invoke, tmp_path, args, message):
    path, _ = cli_ledger(invoke, tmp_path, 1)
    before = open(path, "rb").read()
    one_error(invoke(["odometer", "--ledger", path, *args]), 2, message)
    assert open(path, "rb").read() == before and sorted(os.listdir(tmp_path)) == ["ci.ledger"]


@pytest.mark.parametrize("option", [["--head"], ["--expect-head", "0:" + H.EMPTY], ["--head-file", "x.head"]])
def test_cli_head_options_need_a_ledger(invoke, option):
    one_error(
        invoke(["odometer", "--event", "gaussian:sigma=1", "--delta", "1e-6", *option]), 2, "needs --ledger"
    )


def test_cli_a_malformed_head_file_is_exit_2(invoke, tmp_path):
    path, _ = cli_ledger(invoke, tmp_path, 1)
    hf = tmp_path / "ci.head"
    hf.write_text("not a head\n")
    one_error(
        invoke(["odometer", "--ledger", path, "--head-file", str(hf)]),
        2,
        f"--head-file {hf}: not a ledger head",
    )


def test_cli_a_head_file_that_cannot_be_replaced_is_exit_1_naming_the_new_head(invoke, tmp_path, monkeypatch):
    path, hf = str(tmp_path / "ci.ledger"), str(tmp_path / "ci.head")
    assert (
        invoke(["odometer", "--ledger", path, "--add", "gaussian:sigma=5", "--delta", "1e-6"]).exit_code == 0
    )

    def fail(*a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(H.os, "replace", fail)
    res = invoke(["odometer", "--ledger", path, "--add", "gaussian:sigma=6", "--head-file", hf])
    new = H.head(L.read(path))
    assert new.count == 2  # the entry was recorded; only its head could not be kept
    one_error(res, 1, f"--head-file {hf}: cannot write the ledger's head {new} (no space left on device)")
    assert sorted(os.listdir(tmp_path)) == ["ci.ledger"]
