import pytest

from verifiers.textnorm import normalize, word_error_rate


@pytest.mark.parametrize(
    ("written", "heard"),
    [
        ("Dr. Smith has 5 cats.", "doctor smith has five cats"),
        ("Mr. Jones met Mrs. Brown.", "Mister Jones met Missus Brown"),
        ("It cost $5.20 in 1999!", "it cost five dollars and twenty cents in nineteen ninety nine"),
        ("He came 3rd; twenty-one ran.", "he came third, 21 ran"),
        ("The colour is grey.", "The color is gray"),
        ("Bring fruit, e.g. apples, etc.", "bring fruit for example apples et cetera"),
        ("We met at 3:30 p.m.", "we met at three thirty PM"),
        ("OK, don't.", "okay do not"),
        ("Hello\u2014world \u201cquoted\u201d", "hello world quoted"),
    ],
)
def test_what_a_listener_cannot_hear_is_not_an_error(written, heard):
    assert normalize(written) == normalize(heard)
    assert word_error_rate(written, heard) == 0.0


def test_real_word_errors_count():
    reference = "The birch canoe slid on the smooth planks."
    assert word_error_rate(reference, "The birch canoe slid on the smooth planks") == 0.0
    assert word_error_rate(reference, "the merch canoe slid on the smooth planks") == 1 / 8
    assert word_error_rate(reference, "the birch canoe on the smooth planks") == 1 / 8  # deletion
    assert word_error_rate(reference, "") == 1.0
    # insertions are counted too, so babbling can score above 1
    assert word_error_rate("stop", "stop and go and stop and go") > 1.0


def test_empty_reference():
    assert word_error_rate("", "") == 0.0
    assert word_error_rate("...", "") == 0.0  # punctuation only: nothing to say
    assert word_error_rate("", "something was said") == 1.0
    assert word_error_rate("  ", "uh") == 0.0  # a filler word normalises away


def test_normalize_shape():
    assert normalize("  Hello,   WORLD!  ") == "hello world"
    assert normalize("") == ""


def test_word_error_counts_separate_insertions_from_deletions():
    from verifiers.textnorm import word_error_counts

    text = "The birch canoe slid on the smooth planks."
    repeated = word_error_counts(text, "The birch canoe the birch canoe slid on the smooth planks")
    assert repeated == {"insertions": 3, "deletions": 0, "substitutions": 0}
    skipped = word_error_counts(text, "The birch slid on the smooth planks")
    assert skipped == {"insertions": 0, "deletions": 1, "substitutions": 0}
    assert word_error_counts(text, "")["deletions"] == 8
    assert word_error_counts("", "hello there")["insertions"] == 2


def test_compounds_are_heard_alike_with_or_without_their_space_or_hyphen():
    from verifiers.textnorm import word_error_counts, word_error_rate

    none = {"insertions": 0, "deletions": 0, "substitutions": 0}
    assert word_error_counts("But the show-places of it", "But the showplaces of it") == none
    assert word_error_counts("a gaminlike grin", "a gamin like grin") == none
    assert word_error_counts("to-day we go", "today we go") == none
    # a real extra word is still one
    assert word_error_counts("the cat sat", "the cat sat sat")["insertions"] == 1
    assert word_error_rate("a black bird", "a blackbird") == 0.0
