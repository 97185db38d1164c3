"""Claims the README, its guide and dpcalc(1) make about output, checked against what dpcalc does."""

import json

from dpcalc import devtools, readme


def test_the_readme_error_example_is_the_error_dpcalc_prints(invoke):
    res = invoke(["compose", "gausian:sigma=1", "--delta", "1e-5"])
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert line.startswith("Error: mechanism 'gausian:sigma=1': unknown kind")
    assert f"`{line}`" in (readme.GUIDE / "compose.md").read_text()  # the guide's compose page


def test_the_man_page_says_what_json_writes_for_inf(invoke):
    res = invoke(["compose", "gaussian:sigma=1", "--delta", "0", "-f", "json", "--columns", "epsilon"])
    assert json.loads(res.stdout)[0]["epsilon"] == "inf"
    page = devtools.man_page(None)
    assert "JSON writes null for inf" not in page
    assert 'JSON writes the string "inf" for inf' in page
