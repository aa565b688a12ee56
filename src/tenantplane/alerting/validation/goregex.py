"""Go regular expressions as Alertmanager 0.25 compiles them (Go 1.19.8's regexp/syntax,
Perl flags), checked with RE2 itself (Google's `google-re2` bindings): Go's regexp/syntax
is a port of RE2's parser, so the grammar (repetitions and their nesting, classes,
escapes, flags) is RE2's. A short scan first refuses what Go 1.19 refuses and today's RE2
accepts (`\\C`, `(?<name>`, non-ASCII group names, scripts newer than Unicode 13), and
bounds what a configuration's expressions may cost (see docs/alerting.md, "Limits").
"""

from __future__ import annotations

from dataclasses import dataclass

import re2

# Deliberately stricter than Go (which refuses capture groups nested about 1,000 deep and
# has no size limit in 1.19): parentheses nest at most this deep, each expression compiles
# within RE2's default memory budget, and all expressions of one configuration together
# compile to at most MAX_CONFIG_REGEX_INSTRUCTIONS RE2 instructions. A shared
# Alertmanager compiles every tenant's expressions, so their cost is bounded like templates.
MAX_REGEX_NESTING = 100
MAX_REGEX_MEMORY_BYTES = 8 << 20
MAX_CONFIG_REGEX_INSTRUCTIONS = 1_000_000

# Unicode 13.0.0, the tables of Go 1.19 (Unicode 14 scripts such as Vithkuqi are refused).
_CATEGORIES = frozenset(
    [
        "C",
        "Cc",
        "Cf",
        "Co",
        "Cs",
        "L",
        "Ll",
        "Lm",
        "Lo",
        "Lt",
        "Lu",
        "M",
        "Mc",
        "Me",
        "Mn",
        "N",
        "Nd",
        "Nl",
        "No",
        "P",
        "Pc",
        "Pd",
        "Pe",
        "Pf",
        "Pi",
        "Po",
        "Ps",
        "S",
        "Sc",
        "Sk",
        "Sm",
        "So",
        "Z",
        "Zl",
        "Zp",
        "Zs",
        "Any",
    ]
)
_SCRIPTS = frozenset(
    [
        "Adlam",
        "Ahom",
        "Anatolian_Hieroglyphs",
        "Arabic",
        "Armenian",
        "Avestan",
        "Balinese",
        "Bamum",
        "Bassa_Vah",
        "Batak",
        "Bengali",
        "Bhaiksuki",
        "Bopomofo",
        "Brahmi",
        "Braille",
        "Buginese",
        "Buhid",
        "Canadian_Aboriginal",
        "Carian",
        "Caucasian_Albanian",
        "Chakma",
        "Cham",
        "Cherokee",
        "Chorasmian",
        "Common",
        "Coptic",
        "Cuneiform",
        "Cypriot",
        "Cyrillic",
        "Deseret",
        "Devanagari",
        "Dives_Akuru",
        "Dogra",
        "Duployan",
        "Egyptian_Hieroglyphs",
        "Elbasan",
        "Elymaic",
        "Ethiopic",
        "Georgian",
        "Glagolitic",
        "Gothic",
        "Grantha",
        "Greek",
        "Gujarati",
        "Gunjala_Gondi",
        "Gurmukhi",
        "Han",
        "Hangul",
        "Hanifi_Rohingya",
        "Hanunoo",
        "Hatran",
        "Hebrew",
        "Hiragana",
        "Imperial_Aramaic",
        "Inherited",
        "Inscriptional_Pahlavi",
        "Inscriptional_Parthian",
        "Javanese",
        "Kaithi",
        "Kannada",
        "Katakana",
        "Kayah_Li",
        "Kharoshthi",
        "Khitan_Small_Script",
        "Khmer",
        "Khojki",
        "Khudawadi",
        "Lao",
        "Latin",
        "Lepcha",
        "Limbu",
        "Linear_A",
        "Linear_B",
        "Lisu",
        "Lycian",
        "Lydian",
        "Mahajani",
        "Makasar",
        "Malayalam",
        "Mandaic",
        "Manichaean",
        "Marchen",
        "Masaram_Gondi",
        "Medefaidrin",
        "Meetei_Mayek",
        "Mende_Kikakui",
        "Meroitic_Cursive",
        "Meroitic_Hieroglyphs",
        "Miao",
        "Modi",
        "Mongolian",
        "Mro",
        "Multani",
        "Myanmar",
        "Nabataean",
        "Nandinagari",
        "New_Tai_Lue",
        "Newa",
        "Nko",
        "Nushu",
        "Nyiakeng_Puachue_Hmong",
        "Ogham",
        "Ol_Chiki",
        "Old_Hungarian",
        "Old_Italic",
        "Old_North_Arabian",
        "Old_Permic",
        "Old_Persian",
        "Old_Sogdian",
        "Old_South_Arabian",
        "Old_Turkic",
        "Oriya",
        "Osage",
        "Osmanya",
        "Pahawh_Hmong",
        "Palmyrene",
        "Pau_Cin_Hau",
        "Phags_Pa",
        "Phoenician",
        "Psalter_Pahlavi",
        "Rejang",
        "Runic",
        "Samaritan",
        "Saurashtra",
        "Sharada",
        "Shavian",
        "Siddham",
        "SignWriting",
        "Sinhala",
        "Sogdian",
        "Sora_Sompeng",
        "Soyombo",
        "Sundanese",
        "Syloti_Nagri",
        "Syriac",
        "Tagalog",
        "Tagbanwa",
        "Tai_Le",
        "Tai_Tham",
        "Tai_Viet",
        "Takri",
        "Tamil",
        "Tangut",
        "Telugu",
        "Thaana",
        "Thai",
        "Tibetan",
        "Tifinagh",
        "Tirhuta",
        "Ugaritic",
        "Vai",
        "Wancho",
        "Warang_Citi",
        "Yezidi",
        "Yi",
        "Zanabazar_Square",
    ]
)
_CLASS_NAMES = _CATEGORIES | _SCRIPTS


class RegexError(ValueError):
    def __init__(self, kind: str, fragment: str) -> None:
        super().__init__(f"error parsing regexp: {kind}: `{fragment}`")


class RegexLimitError(RegexError):
    """An expression beyond one of this service's limits (not invalid in Go's sense)."""

    def __init__(self, message: str, code: str) -> None:
        ValueError.__init__(self, message)
        self.code = code


@dataclass
class RegexBudget:
    """RE2 instructions left for the expressions of one configuration."""

    remaining: int = MAX_CONFIG_REGEX_INSTRUCTIONS

    def spend(self, instructions: int) -> None:
        self.remaining -= instructions
        if self.remaining < 0:
            raise RegexLimitError(
                "the regular expressions of one configuration compile to at most "
                f"{MAX_CONFIG_REGEX_INSTRUCTIONS} RE2 instructions together",
                "REGEX_TOO_LARGE",
            )


def _unicode_class(s: str, i: int) -> int:
    """`\\pX` or `\\p{Name}` at ``i``: Go's tables only. Returns the index after it."""
    if s.startswith("{", i + 2):
        end = s.find("}", i + 2)
        if end < 0:
            return i + 2  # RE2 reports the missing brace
        name, after = s[i + 3 : end], end + 1
    else:
        name, after = s[i + 2 : i + 3], i + 3
    if name.removeprefix("^") not in _CLASS_NAMES:
        raise RegexError("invalid character class range", s[i:after])
    return after


def _escape(s: str, i: int) -> int:
    """The escape at ``i`` (a backslash); returns the index after it."""
    kind = s[i + 1 : i + 2]
    if kind == "C":
        raise RegexError("invalid escape sequence", "\\C")
    if kind in ("p", "P"):
        return _unicode_class(s, i)
    return i + 2


def _char_class(s: str, i: int) -> int:
    """The class starting at ``i`` (a `[`); returns the index after its `]`."""
    j = i + 1
    if s.startswith("^", j):
        j += 1
    if s.startswith("]", j):
        j += 1  # a leading ']' is literal
    while j < len(s) and s[j] != "]":
        if s.startswith("[:", j):
            end = s.find(":]", j + 2)
            j = end + 2 if end >= 0 else j + 1
        elif s[j] == "\\":
            j = _escape(s, j)
        else:
            j += 1
    return j + 1


def _group(s: str, i: int) -> None:
    """Perl group syntax Go 1.19 refuses and RE2 accepts."""
    if s.startswith("(?<", i):
        raise RegexError("invalid or unsupported Perl syntax", "(?<")
    if s.startswith("(?P<", i):
        end = s.find(">", i)
        if end < 0:
            return  # RE2 reports it
        name = s[i + 4 : end]
        if not name or not all(c.isascii() and (c.isalnum() or c == "_") for c in name):
            raise RegexError("invalid named capture", s[i : end + 1])


def _scan(s: str) -> None:
    """Refuse what Go refuses beyond RE2, and nesting beyond MAX_REGEX_NESTING."""
    depth = 0
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if s.startswith("\\Q", i):
                end = s.find("\\E", i + 2)
                i = len(s) if end < 0 else end + 2
            else:
                i = _escape(s, i)
        elif c == "[":
            i = _char_class(s, i)
        elif c == "(":
            _group(s, i)
            depth += 1
            if depth > MAX_REGEX_NESTING + 1:  # the anchoring group is not the tenant's
                raise RegexLimitError(
                    f"parentheses in a regular expression nest at most {MAX_REGEX_NESTING} levels",
                    "REGEX_TOO_DEEP",
                )
            i += 1
        else:
            if c == ")" and depth > 0:
                depth -= 1
            i += 1


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = MAX_REGEX_MEMORY_BYTES
    return options


def check_go_regex(
    pattern: str, budget: RegexBudget | None = None, *, anchored: bool = True
) -> int:
    """Raise RegexError when Go's regexp.Compile would reject ``^(?:pattern)$``, or when
    the expression exceeds this service's limits (RegexLimitError, with its code);
    otherwise return its size in RE2 instructions.

    Alertmanager anchors every regex of a matcher that way, so the wrapped form is what is
    checked: `)(` is valid there, an unterminated `\\Q` is not. Templates' `match` and
    `reReplaceAll` compile the expression as it is (``anchored=False``).
    """
    wrapped = "^(?:" + pattern + ")$" if anchored else pattern
    _scan(wrapped)
    try:
        encoded = wrapped.encode("utf-8")
    except UnicodeEncodeError:
        raise RegexError("invalid UTF-8", pattern) from None
    # The compiled program itself, not re2.compile(): that one keeps the last 128 programs
    # in a cache, and these are compiled once, only to be judged.
    compiled = re2._re2.RE2(encoded, _options())
    if not compiled.ok():
        error = compiled.error().decode("utf-8", "replace")
        if "pattern too large" in error:
            raise RegexLimitError(
                "regular expression too large: each compiles within "
                f"{MAX_REGEX_MEMORY_BYTES >> 20} MiB of RE2 memory",
                "REGEX_TOO_LARGE",
            )
        raise RegexError(*error.split(": ", 1)) if ": " in error else RegexError(error, "")
    size: int = compiled.ProgramSize()
    (budget or RegexBudget()).spend(size)
    return size
