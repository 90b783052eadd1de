"""Tests for sentence splitting and chunking of long sentences."""

from __future__ import annotations

import pytest

from verified_tts.text.sentences import split_long, split_sentences, split_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Dr. Smith met Mr. and Mrs. Jones on St. Paul's day. They talked.",
            ["Dr. Smith met Mr. and Mrs. Jones on St. Paul's day.", "They talked."],
        ),
        (
            "Fruit, e.g. apples, i.e. red ones, is fine. Pears vs. plums, etc. and more.",
            ["Fruit, e.g. apples, i.e. red ones, is fine.", "Pears vs. plums, etc. and more."],
        ),
        ("Bring cups, plates, etc. Then we eat.", ["Bring cups, plates, etc.", "Then we eat."]),
        ("It weighed 3.5 kg. It cost 2.75 more.", ["It weighed 3.5 kg.", "It cost 2.75 more."]),
        (
            "He moved to the U.S. The U.S. Army was there.",
            ["He moved to the U.S.", "The U.S. Army was there."],
        ),
        (
            "J. R. R. Tolkien wrote. John F. Kennedy spoke.",
            ["J. R. R. Tolkien wrote.", "John F. Kennedy spoke."],
        ),
        (
            "It was No. 5 on the list. No. It was not.",
            ["It was No. 5 on the list.", "No.", "It was not."],
        ),
        (
            "He waited... and waited. Then... Nothing.",
            ["He waited... and waited.", "Then...", "Nothing."],
        ),
        ('"Come here." She came.', ['"Come here."', "She came."]),
        ("“Stop!” ‘Why?’ he asked.", ["“Stop!”", "‘Why?’ he asked."]),
        (
            '"Why?" he asked. "Really?!" Tom shouted.',
            ['"Why?" he asked.', '"Really?!"', "Tom shouted."],
        ),
        ("(See above.) Then go.", ["(See above.)", "Then go."]),
        ("No terminal punctuation", ["No terminal punctuation"]),
        ("  ", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_sentences_are_substrings_in_order() -> None:
    text = 'Mr. Fox ran.  "Wait!" cried Dr. Owl... The end.'
    cursor = 0
    for sentence in split_sentences(text):
        found = text.find(sentence, cursor)
        assert found >= cursor
        cursor = found + len(sentence)


def test_short_sentence_is_not_split() -> None:
    assert split_long("A short one.", 50) == ["A short one."]


def test_long_sentence_splits_at_clause_boundaries_first() -> None:
    sentence = (
        "The wolf, who had watched the lamb for a long time from across the stream, wanted an "
        "excuse to eat it; so he called out and accused it of muddying his water, although the "
        "lamb stood downstream and could not have done so."
    )
    chunks = split_long(sentence, 100)
    assert all(len(chunk) <= 100 for chunk in chunks)
    assert " ".join(chunks) == sentence
    # The semicolon is the strongest boundary: some chunk must end there.
    assert any(chunk.endswith("eat it;") for chunk in chunks)
    # Every other cut lands after a comma, never inside a clause.
    assert all(chunk.endswith((",", ";", ".")) for chunk in chunks)


def test_dash_is_a_clause_boundary() -> None:
    chunks = split_long("He ran as fast as he could—but the river was wider than he thought", 40)
    assert chunks == ["He ran as fast as he could—", "but the river was wider than he thought"]


def test_conjunction_boundary_when_no_punctuation() -> None:
    chunks = split_long("the fox looked up at the grapes and the fox went home hungry", 40)
    assert chunks == ["the fox looked up at the grapes", "and the fox went home hungry"]


def test_word_boundaries_never_mid_word() -> None:
    sentence = "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj"
    chunks = split_long(sentence, 12)
    assert all(len(chunk) <= 12 for chunk in chunks)
    assert " ".join(chunks) == sentence
    assert all(word in sentence.split() for chunk in chunks for word in chunk.split())


def test_overlong_single_word_is_kept_whole() -> None:
    word = "supercalifragilisticexpialidocious"
    assert split_long(f"a {word}", 10) == ["a", word]


def test_custom_length_measures_pieces() -> None:
    # Pieces are measured by the caller's length (e.g. the spoken form), not raw characters.
    chunks = split_long("one two three four", 100, length=lambda s: 100 * len(s.split()))
    assert chunks == ["one", "two", "three", "four"]


def test_split_text_groups_chunks_by_sentence() -> None:
    long = "Then " + "word " * 10 + "end."
    grouped = split_text("Short. " + long, 20)
    assert grouped[0] == ["Short."]
    assert len(grouped) == 2 and len(grouped[1]) > 1
    assert " ".join(grouped[1]) == long
    assert all(len(chunk) <= 20 for chunk in grouped[1])
