"""The generated ISA reference page and the JSON table."""

import json
import pathlib
import subprocess
import sys

from xdsa import status
from xdsa.golden import isa, isadoc

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _status():
    golden, rtl = status.golden_keys(), status.rtl_keys()
    return lambda op: status.status(op, golden, rtl)


def test_checked_in_reference_page_is_current():
    page = (ROOT / "docs" / "isa-reference.md").read_text(encoding="utf-8")
    fresh = isadoc.reference_markdown(_status())
    assert page == fresh, ("docs/isa-reference.md is stale: regenerate it with "
                           "`xdsa isa --markdown -o docs/isa-reference.md`")


def test_json_table_from_the_cli():
    out = subprocess.run([sys.executable, "-m", "xdsa", "isa", "--json"], capture_output=True, text=True,
                         check=True).stdout
    records = json.loads(out)
    assert len(records) == 224
    assert sum(r["section"] == "BASE" for r in records) == 142
    assert sum(r["section"] == "AI" for r in records) == 82
    by_mn = {r["mnemonic"]: r for r in records}
    add = by_mn["add"]
    assert (add["name"], add["section"], add["group"], add["code"]) == ("ADD", "BASE", 0, 0)
    assert set(add["implemented"]) == {"golden", "rtl"}
    f16 = {f["name"]: f for f in add["operand_table"]["16"]["fields"]}
    assert f16["len"]["bits"] == [{"hi": 63, "lo": 48, "value_lo": 0}]
    f64 = {f["name"]: f for f in add["operand_table"]["64"]["fields"]}
    assert f64["len"]["bits"] == [{"hi": 255, "lo": 192, "value_lo": 0}]
    assert by_mn["exit"]["operand_table"] is None
    assert (by_mn["exit"]["group"], by_mn["exit"]["code"]) == (0x1FF, 0x1F)
    relu = by_mn["relu"]
    assert (relu["section"], relu["group"], relu["code"]) == ("AI", 0, 0)


def test_implemented_flags_are_derived():
    golden, rtl = status.golden_keys(), status.rtl_keys()
    records = isadoc.opcode_records(_status())
    for op, r in zip(isa.OPCODES, records):
        assert r["implemented"] == {"golden": op.key in golden, "rtl": op.key in rtl}
