"""Text normalisation: rewrite what a TTS model reads badly into the words a narrator says.

:func:`normalize_text` runs a fixed list of rules over one sentence, in an order where each
rule sees text the earlier ones have left alone: abbreviations (with context for "St." and
"Dr."), currency, percentages, times, decades, ordinals, fractions, Roman numerals in names and
chapter titles, and finally plain numbers (years, thousands separators, decimals, negatives),
all spelled out with num2words. Everything is table-driven so that adding a title, a currency
or a chapter word is one line. The original text is kept elsewhere for reports; this only
produces what the generator is asked to say.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from num2words import num2words

__all__ = ["normalize_text", "roman_to_int", "spell_number", "spell_year"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# --- tables ----------------------------------------------------------------------------------

# Abbreviation -> expansion. Matched case-insensitively as whole tokens; the expansion is
# capitalised when the abbreviation was ("E.g." -> "For example").
ABBREVIATIONS: dict[str, str] = {
    "Mr.": "Mister",
    "Mrs.": "Missus",
    "Ms.": "Miz",
    "Messrs.": "Messieurs",
    "Prof.": "Professor",
    "Rev.": "Reverend",
    "Fr.": "Father",
    "Capt.": "Captain",
    "Col.": "Colonel",
    "Gen.": "General",
    "Lt.": "Lieutenant",
    "Sgt.": "Sergeant",
    "Gov.": "Governor",
    "Sen.": "Senator",
    "Hon.": "Honourable",
    "Jr.": "Junior",
    "Sr.": "Senior",
    "Mt.": "Mount",
    "Ft.": "Fort",
    "Ave.": "Avenue",
    "Co.": "Company",
    "Inc.": "Incorporated",
    "Ltd.": "Limited",
    "e.g.": "for example",
    "i.e.": "that is",
    "etc.": "et cetera",
    "vs.": "versus",
    "vs": "versus",
    "cf.": "compare",
    "viz.": "namely",
    "approx.": "approximately",
}

# Symbol -> (one major, many major, one minor, many minor); a currency without a minor unit
# reads its decimals as a decimal number.
CURRENCIES: dict[str, tuple[str, str, str | None, str | None]] = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "€": ("euro", "euros", "cent", "cents"),
    "¥": ("yen", "yen", None, None),
    "₹": ("rupee", "rupees", "paisa", "paise"),
}

# Words after which a Roman numeral is a plain number ("Chapter IV" -> "Chapter four").
NUMBERED_WORDS = _words(
    "chapter book part volume act scene section canto psalm article appendix stave lesson "
    "episode phase stage war"
)

# Unicode vulgar fractions -> (numerator, denominator).
UNICODE_FRACTIONS: dict[str, tuple[int, int]] = {
    "½": (1, 2),
    "⅓": (1, 3),
    "⅔": (2, 3),
    "¼": (1, 4),
    "¾": (3, 4),
    "⅕": (1, 5),
    "⅛": (1, 8),
    "⅜": (3, 8),
    "⅝": (5, 8),
    "⅞": (7, 8),
}

SYMBOLS: dict[str, str] = {"&": " and ", "°": " degrees", "%": " percent"}

# Words that precede "Dr." as a title, not as the street suffix ("The Dr. said").
_DETERMINERS = frozenset(
    ["the", "a", "an", "this", "that", "our", "my", "his", "her", "their", "your", "its"]
)
_CLOSERS = "\"'”’»)]"

# --- number words ----------------------------------------------------------------------------


def _cardinal(n: int) -> str:
    # num2words puts commas into long numbers; a TTS would pause at each one.
    return num2words(n).replace(",", "")


def _digits(digits: str) -> str:
    return " ".join(_cardinal(int(d)) for d in digits)


def spell_number(integer: str, fraction: str | None = None, negative: bool = False) -> str:
    """Words for digit strings: ("1,234", "5") -> "one thousand ... point five"."""
    integer = integer.replace(",", "")
    # Leading zeros ("007") and very long digit strings are read digit by digit.
    if (len(integer) > 1 and integer.startswith("0")) or len(integer) > 15:
        words = _digits(integer)
    else:
        words = _cardinal(int(integer))
    if fraction:
        words += " point " + _digits(fraction)
    return ("minus " + words) if negative else words


def spell_year(year: int) -> str:
    """Words for a year as it is said: 1869 "eighteen sixty-nine", 2005 "two thousand five"."""
    if year % 1000 == 0 or 2000 <= year < 2010:
        thousands, rest = divmod(year, 1000)
        return _cardinal(thousands) + " thousand" + (f" {_cardinal(rest)}" if rest else "")
    high, low = divmod(year, 100)
    if low == 0:
        return f"{_cardinal(high)} hundred"
    if low < 10:
        return f"{_cardinal(high)} oh {_cardinal(low)}"
    return f"{_cardinal(high)} {_cardinal(low)}"


def _is_year(integer: str) -> bool:
    return len(integer) == 4 and integer[0] != "0" and 1100 <= int(integer) <= 2099


def _plural(words: str) -> str:
    """Pluralise the last word of a number: "nineteen sixty" -> "nineteen sixties"."""
    if words.endswith("y"):
        return words[:-1] + "ies"
    if words.endswith("x"):
        return words + "es"
    return words + "s"


_ROMAN = re.compile(r"M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_to_int(numeral: str) -> int | None:
    """Value of a well-formed Roman numeral ("XIV" -> 14), or None if it is not one."""
    numeral = numeral.upper()
    if not numeral or not _ROMAN.fullmatch(numeral):
        return None
    total = 0
    for char, following in zip(numeral, numeral[1:] + " ", strict=True):
        value = _ROMAN_VALUES[char]
        total += -value if _ROMAN_VALUES.get(following, 0) > value else value
    return total


# --- rules -----------------------------------------------------------------------------------


def _keep_stop(match: re.Match[str]) -> str:
    """A full stop swallowed with an abbreviation still ends the sentence if nothing follows."""
    rest = match.string[match.end() :]
    ends = match.group(0).endswith(".") and not rest.strip().strip(_CLOSERS)
    return "." if ends else ""


def _capitalise_like(source: str, words: str) -> str:
    return words[0].upper() + words[1:] if source[:1].isupper() else words


def _neighbours(match: re.Match[str]) -> tuple[str, str]:
    """The word before and the word after a match (punctuation trimmed)."""
    before = match.string[: match.start()].split()
    after = match.string[match.end() :].split()
    prev = before[-1].strip(_CLOSERS + ",;:") if before else ""
    nxt = after[0].lstrip("\"'“‘(") if after else ""
    return prev, nxt


def _is_name(word: str) -> bool:
    return word[:1].isupper()


def _is_numberish(word: str) -> bool:
    return bool(re.fullmatch(r"\d+(?:st|nd|rd|th)?", word, re.IGNORECASE))


def _saint_or_street(match: re.Match[str]) -> str:
    prev, nxt = _neighbours(match)
    if _is_name(nxt) and not _is_numberish(prev):
        return "Saint"
    return "Street" + _keep_stop(match)


def _doctor_or_drive(match: re.Match[str]) -> str:
    prev, nxt = _neighbours(match)
    after_name = (_is_name(prev) and prev.lower() not in _DETERMINERS) or _is_numberish(prev)
    if after_name and not _is_name(nxt):
        return "Drive" + _keep_stop(match)
    return "Doctor"


def _abbreviation(match: re.Match[str]) -> str:
    text = match.group(0)
    expansion = _ABBREVIATION_LOOKUP[text.lower()]
    return _capitalise_like(text, expansion) + _keep_stop(match)


_ABBREVIATION_LOOKUP = {key.lower(): value for key, value in ABBREVIATIONS.items()}


def _currency(match: re.Match[str]) -> str:
    symbol, integer, fraction, scale = match.groups()
    one, many, minor_one, minor_many = CURRENCIES[symbol]
    if scale:
        return f"{spell_number(integer, fraction)} {scale.lower()} {many}"
    value = int(integer.replace(",", ""))
    if fraction and minor_one is None:
        return f"{spell_number(integer, fraction)} {many}"
    cents = int((fraction or "0").ljust(2, "0")[:2])
    parts = []
    if value or not cents:
        parts.append(f"{spell_number(integer)} {one if value == 1 else many}")
    if cents:
        parts.append(f"{_cardinal(cents)} {minor_one if cents == 1 else minor_many}")
    return " and ".join(parts)


def _time(match: re.Match[str]) -> str:
    hour, minute, meridiem = int(match.group(1)), int(match.group(2)), match.group(3)
    words = _cardinal(hour)
    if minute == 0:
        words += "" if meridiem else " o'clock"
    elif minute < 10:
        words += f" oh {_cardinal(minute)}"
    else:
        words += f" {_cardinal(minute)}"
    if meridiem:
        words += f" {meridiem.lower()} m" + _keep_stop(match)
    return words


def _hour_meridiem(match: re.Match[str]) -> str:
    return f"{_cardinal(int(match.group(1)))} {match.group(2).lower()} m" + _keep_stop(match)


def _decade(match: re.Match[str]) -> str:
    digits = match.group(1)
    words = spell_year(int(digits)) if len(digits) == 4 else _cardinal(int(digits))
    return _plural(words)


def _ordinal(match: re.Match[str]) -> str:
    return num2words(int(match.group(1).replace(",", "")), to="ordinal").replace(",", "")


def _fraction_words(numerator: int, denominator: int, mixed: bool) -> str:
    if denominator == 2:
        name = "half" if numerator == 1 else "halves"
    elif denominator == 4:
        name = "quarter" if numerator == 1 else "quarters"
    else:
        name = num2words(denominator, to="ordinal") + ("" if numerator == 1 else "s")
    # "one and a half" reads better than "one and one half".
    count = "a" if mixed and numerator == 1 else _cardinal(numerator)
    return f"{count} {name}"


def _fraction(match: re.Match[str]) -> str:
    whole, numerator, denominator = match.group(1), int(match.group(2)), int(match.group(3))
    if not 2 <= denominator <= 32 or numerator > 99:
        return match.group(0)
    words = _fraction_words(numerator, denominator, mixed=whole is not None)
    return f"{_cardinal(int(whole))} and {words}" if whole else words


def _unicode_fraction(match: re.Match[str]) -> str:
    whole = match.group(1)
    numerator, denominator = UNICODE_FRACTIONS[match.group(2)]
    words = _fraction_words(numerator, denominator, mixed=bool(whole))
    return f"{_cardinal(int(whole))} and {words}" if whole else words


def _numbered_roman(match: re.Match[str]) -> str:
    word, numeral = match.groups()
    value = roman_to_int(numeral)
    if value is None or word.lower() not in NUMBERED_WORDS:
        return match.group(0)
    return f"{word} {_cardinal(value)}"


def _number_sign(match: re.Match[str]) -> str:
    return "Number " if match.group(0).startswith("N") else "number "


def _regnal_roman(match: re.Match[str]) -> str:
    value = roman_to_int(match.group(2))
    if value is None:
        return match.group(0)
    ordinal = num2words(value, to="ordinal")
    return f"{match.group(1)} the {ordinal[0].upper()}{ordinal[1:]}"


def _bare_roman(match: re.Match[str]) -> str:
    numeral, stop = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
    value = roman_to_int(numeral)
    return match.group(0) if value is None else _cardinal(value) + stop


def _number(match: re.Match[str]) -> str:
    sign, integer, fraction = match.groups()
    if not sign and not fraction and _is_year(integer):
        return spell_year(int(integer))
    return spell_number(integer, fraction, negative=bool(sign))


_NUM = r"(\d{1,3}(?:,\d{3})+|\d+)"  # an integer, optionally with thousands separators
_NOT_AFTER = r"(?<![\w.,/])"
_NOT_BEFORE = r"(?![\w/]|[.,]\d)"
_MERIDIEM = r"([AaPp])\.?\s?[Mm]\.?(?![A-Za-z])"
_CURRENCY_SYMBOLS = "".join(re.escape(s) for s in CURRENCIES)
_ABBREVIATION_ALTERNATION = "|".join(
    re.escape(key) for key in sorted(ABBREVIATIONS, key=len, reverse=True)
)

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str] | str]


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip


def _iso_date(match: re.Match[str]) -> str:
    """2024-05-12 as a narrator says it: "May twelfth, twenty twenty-four"."""
    year, month, day = (int(match.group(k)) for k in (1, 2, 3))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match.group(0)
    ordinal = num2words(day, to="ordinal")
    return f"{_MONTHS[month - 1]} {ordinal}, {spell_year(year)}"


def _telephone(match: re.Match[str]) -> str:
    return f"{_digits(match.group(1))}, {_digits(match.group(2))}"


def _hyphen_range(match: re.Match[str]) -> str:
    """A range ("3-4", "pp. 120-135", "1914-18") read with "to", where the second number is the
    larger (a year's last digits count as that year); anything else is left as written."""
    first, second = match.group(1), match.group(2)
    end = int(second)
    if len(first) == 4 and len(second) == 2:  # 1914-18
        end = int(first[:2] + second)
    return f"{first} to {second}" if end > int(first) else match.group(0)


def _temperature(match: re.Match[str]) -> str:
    return " degrees Celsius" if match.group(1) == "C" else " degrees Fahrenheit"


# Applied in order; each rule works on the output of the ones before it.
RULES: tuple[Rule, ...] = (
    (re.compile(r"\bSt\b\.?"), _saint_or_street),
    (re.compile(r"\bDr\b\.?"), _doctor_or_drive),
    (re.compile(r"\b[Nn]o\.\s*(?=\d)|#(?=\d)"), _number_sign),
    (
        re.compile(rf"(?<![\w.])(?:{_ABBREVIATION_ALTERNATION})(?![\w])", re.IGNORECASE),
        _abbreviation,
    ),
    (
        re.compile(
            rf"([{_CURRENCY_SYMBOLS}])\s?{_NUM}(?:\.(\d+))?"
            r"(?:\s(thousand|million|billion|trillion)\b)?"
        ),
        _currency,
    ),
    (re.compile(rf"(?<![\d:])(\d{{1,2}}):([0-5]\d)(?![\d:])(?:\s?{_MERIDIEM})?"), _time),
    (re.compile(rf"{_NOT_AFTER}(\d{{1,2}})\s?{_MERIDIEM}"), _hour_meridiem),
    (re.compile(rf"{_NOT_AFTER}(\d{{3}}0)s(?!\w)"), _decade),
    (re.compile(r"(?<![\w.,])['’]?([1-9]0)s(?!\w)"), _decade),
    (re.compile(rf"{_NOT_AFTER}{_NUM}(?:st|nd|rd|th)(?!\w)", re.IGNORECASE), _ordinal),
    (re.compile(r"(?<![\w/.])(?:(\d+)\s+)?(\d+)/(\d+)(?![\w/])"), _fraction),
    (re.compile(rf"(?:(\d+)\s?)?([{''.join(UNICODE_FRACTIONS)}])"), _unicode_fraction),
    # Only after a capitalised chapter word: "Book I" is a number, "the book I read" is not.
    (re.compile(r"\b([A-Z][A-Za-z]*)\s+([IVXLCDM]+)\b"), _numbered_roman),
    # "I" and "X" alone are left alone: "Then I went", "Malcolm X".
    (re.compile(r"\b([A-Z][a-z]+)\s+([IVX]{2,}|V)\b"), _regnal_roman),
    # A numeral opening the text is a heading's number ("IV.", "II. The Fox"); the pronoun "I"
    # never stands alone before a full stop.
    (re.compile(r"^\s*([IVXLCDM]+)(\.?)(?=\s*$)|^\s*([IVXLCDM]+)(\.)(?=\s)"), _bare_roman),
    (re.compile(r"(?<=\d)\s?[–—]\s?(?=\d)"), " to "),
    (re.compile(r"(?<![\w-])(\d{4})-(\d{2})-(\d{2})(?![\w-])"), _iso_date),
    # "555-1234" is a telephone number, read digit by digit; "3-4" and "1914-18" are ranges
    (re.compile(r"(?<![\w-])(\d{3})-(\d{4})(?![\w-])"), _telephone),
    (re.compile(r"(?<![\w.,-])(\d{1,4})-(\d{1,4})(?![\w-]|[.,]\d)"), _hyphen_range),
    (re.compile(r"(?<=\d)\s?%"), SYMBOLS["%"]),
    (re.compile(r"(?<=\d)\s?°\s?([CF])\b"), _temperature),
    (re.compile(r"(?<=\d)\s?°"), SYMBOLS["°"]),
    (re.compile(r"§§\s?(?=\d)"), "sections "),
    (re.compile(r"§\s?(?=\d)"), "section "),
    (re.compile(r"(?<![\w~])~\s?(?=\d)"), "about "),
    (re.compile(rf"{_NOT_AFTER}([-−])?{_NUM}(?:\.(\d+))?{_NOT_BEFORE}"), _number),
    (re.compile(r"\s*&\s*"), SYMBOLS["&"]),
    (re.compile(r"\s+"), " "),
)


def normalize_text(text: str) -> str:
    """Rewrite ``text`` (one sentence or chunk) into the words a narrator would say."""
    for pattern, replacement in RULES:
        text = pattern.sub(replacement, text)
    return text.strip()
