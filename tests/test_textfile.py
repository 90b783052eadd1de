import pytest

from verified_tts.errors import UserError
from verified_tts.text.textfile import read_text_file

KINDS = {"kind": "notes file", "expected": "a UTF-8 text file", "empty_hint": "write something"}


def error_of(path, **extra) -> str:
    with pytest.raises(UserError) as error:
        read_text_file(path, **KINDS, **extra)
    return str(error.value)


def test_reads_utf8_with_or_without_bom(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("\ufeffcafé".encode())
    assert read_text_file(path, **KINDS) == "café"


def test_each_mistake_is_one_specific_line(tmp_path):
    assert error_of(tmp_path / "nope.txt").startswith("notes file not found")
    assert "is a directory, not a notes file; give a UTF-8 text file" in error_of(tmp_path)
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"  \n")
    assert error_of(empty).endswith("is empty; write something")
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"ab\x00cd")
    assert "NUL byte at offset 2" in error_of(binary)
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"line one\ncaf\xe9\n")
    assert "(byte 0xe9 at offset 12)" in error_of(latin)

    def by_line(data: bytes, offset: int) -> str:
        return "line " + str(data[:offset].count(b"\n") + 1)

    located = error_of(latin, locate=by_line)
    assert located.startswith("line 2 is not UTF-8 text (byte 0xe9)")
    for message in (error_of(binary), error_of(latin)):
        assert "\n" not in message
