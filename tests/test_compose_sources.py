"""compose reads specs from @FILE and - (standard input), and merges identical specs."""

import json

from dpcalc.input.spec import merge_identical, parse_mechanisms


def test_specs_from_a_file_and_stdin_equal_the_command_line(invoke, tmp_path):
    f = tmp_path / "specs.txt"
    f.write_bytes(b"\xef\xbb\xbfgaussian:sigma=3\r\n# a comment\r\n\r\nlaplace:scale=10  # trailing\r\n")
    direct = invoke(["compose", "gaussian:sigma=3", "laplace:scale=10", "--delta", "1e-5", "-f", "json"])
    from_file = invoke(["compose", f"@{f}", "--delta", "1e-5", "-f", "json"])
    from_stdin = invoke(["compose", "-", "--delta", "1e-5", "-f", "json"], input=f.read_bytes())
    assert direct.exit_code == from_file.exit_code == from_stdin.exit_code == 0, from_file.stderr
    assert json.loads(direct.stdout) == json.loads(from_file.stdout) == json.loads(from_stdin.stdout)


def test_identical_specs_merge_into_one_count(invoke, tmp_path):
    f = tmp_path / "many.txt"
    f.write_text("gaussian:sigma=3\n" * 2000)
    listed = invoke(["compose", f"@{f}", "--delta", "1e-5", "--method", "all", "-f", "json"])
    counted = invoke(
        ["compose", "gaussian:sigma=3,count=2000", "--delta", "1e-5", "--method", "all", "-f", "json"]
    )
    assert listed.exit_code == 0 and json.loads(listed.stdout) == json.loads(counted.stdout)
    specs = merge_identical(parse_mechanisms(["gaussian:sigma=3", "gauss:sigma=3.0,count=4", "laplace:b=1"]))
    assert [(s.kind, s.count) for s in specs] == [("gaussian", 5), ("laplace", 1)]


def test_bad_spec_files_name_the_file_and_line(invoke, tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("gaussian:sigma=3\ngausian:sigma=1\n")
    res = invoke(["compose", f"@{f}", "--delta", "1e-5"])
    assert (
        res.exit_code == 2 and res.stdout == "" and f"{f} line 2: mechanism 'gausian:sigma=1'" in res.stderr
    )
    missing = invoke(["compose", "@/nonexistent/specs.txt", "--delta", "1e-5"])
    assert missing.exit_code == 2 and missing.stderr.startswith("Error: MECHANISM @/nonexistent/specs.txt")
    bad_bytes = invoke(["compose", "-", "--delta", "1e-5"], input=b"gaussian:sigma=3\n\xff\n")
    assert bad_bytes.exit_code == 2 and "not UTF-8" in bad_bytes.stderr
