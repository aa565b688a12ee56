"""Syntax of Go regular expressions (RE2, as Go's regexp/syntax parses them with Perl flags).

Python's `re` accepts constructs Go rejects (look-around, back-references, possessive
quantifiers) and rejects some Go accepts (`\\pL`, `[[:alpha:]]`, `\\z`, `^*`), so Alertmanager's
`match_re` values and regex matchers are checked by this small parser instead.
"""

from __future__ import annotations

_MAX_REPEAT = 1000
_PERL_CLASSES = frozenset("dDsSwW")
_POSIX_CLASSES = frozenset(
    [
        "alnum",
        "alpha",
        "ascii",
        "blank",
        "cntrl",
        "digit",
        "graph",
        "lower",
        "print",
        "punct",
        "space",
        "upper",
        "word",
        "xdigit",
    ]
)
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
        "Cypro_Minoan",
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
        "Old_Uyghur",
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
        "Tangsa",
        "Tangut",
        "Telugu",
        "Thaana",
        "Thai",
        "Tibetan",
        "Tifinagh",
        "Tirhuta",
        "Toto",
        "Ugaritic",
        "Vai",
        "Vithkuqi",
        "Wancho",
        "Warang_Citi",
        "Yezidi",
        "Yi",
        "Zanabazar_Square",
    ]
)
_SIMPLE_ESCAPES = frozenset("afnrtv")
_HEX = frozenset("0123456789abcdefABCDEF")
_OCTAL = frozenset("01234567")


class RegexError(ValueError):
    def __init__(self, kind: str, fragment: str) -> None:
        super().__init__(f"error parsing regexp: {kind}: `{fragment}`")


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.s = pattern
        self.i = 0
        # Per open group: whether the current alternative has an operand to repeat.
        self.depth = 0

    def peek(self, offset: int = 0) -> str:
        j = self.i + offset
        return self.s[j] if j < len(self.s) else ""

    def parse(self) -> None:
        has_operand = False  # an operand the next repetition operator may apply to
        last_was_repeat = False
        group_starts: list[int] = []
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            repeat = False
            if c == "(":
                start = self.i
                if self.peek(1) == "?":
                    opened = self.perl_group()
                    if not opened:  # flags only, e.g. (?i): the previous operand stays repeatable
                        last_was_repeat = False
                        continue
                else:
                    self.i += 1
                group_starts.append(start)
                has_operand = False
            elif c == "|":
                self.i += 1
                has_operand = False
            elif c == ")":
                if not group_starts:
                    raise RegexError("unexpected )", s)
                group_starts.pop()
                self.i += 1
                has_operand = True
            elif c in "*+?":
                start = self.i
                self.i += 1
                if self.peek() == "?":
                    self.i += 1
                self.repeat_operator(start, has_operand, last_was_repeat)
                repeat = True
            elif c == "{" and self.repeat_braces() is not None:
                start = self.i
                low, high, end = self.repeat_braces()  # type: ignore[misc]
                self.i = end
                if self.peek() == "?":
                    self.i += 1
                fragment = s[start : self.i]
                self.repeat_operator(start, has_operand, last_was_repeat)
                if low > _MAX_REPEAT or (high is not None and (high > _MAX_REPEAT or high < low)):
                    raise RegexError("invalid repeat count", fragment)
                repeat = True
            elif c == "[":
                self.char_class()
                has_operand = True
            elif c == "\\":
                self.escape_outside_class()
                has_operand = True
            else:
                self.i += 1
                has_operand = True
            last_was_repeat = repeat
        if group_starts:
            raise RegexError("missing closing )", s)

    def repeat_operator(self, start: int, has_operand: bool, last_was_repeat: bool) -> None:
        fragment = self.s[start : self.i]
        if last_was_repeat:
            raise RegexError("invalid nested repetition operator", self.s[self._last(start)])
        if not has_operand:
            raise RegexError("missing argument to repetition operator", fragment)

    def _last(self, start: int) -> slice:
        # Go quotes the previous operator together with this one (`**`).
        return slice(max(0, start - 1), self.i)

    def repeat_braces(self) -> tuple[int, int | None, int] | None:
        """Parse `{n}`, `{n,}` or `{n,m}` at the cursor; None means a literal `{`."""
        s, j = self.s, self.i + 1
        digits_start = j
        while j < len(s) and s[j].isdigit() and s[j].isascii():
            j += 1
        if j == digits_start:
            return None
        low = int(s[digits_start:j])
        high: int | None = low
        if j < len(s) and s[j] == ",":
            j += 1
            high_start = j
            while j < len(s) and s[j].isdigit() and s[j].isascii():
                j += 1
            high = int(s[high_start:j]) if j > high_start else None
        if j >= len(s) or s[j] != "}":
            return None
        return low, high, j + 1

    def perl_group(self) -> bool:
        """After `(?`: a named group, `(?i:` or bare flags `(?i)`. True when a group opens."""
        s, start = self.s, self.i
        if s.startswith("(?P<", start):
            end = s.find(">", start + 4)
            if end < 0:
                raise RegexError("invalid named capture", s[start:])
            name = s[start + 4 : end]
            if not name or not all((ch.isalnum() and ch.isascii()) or ch == "_" for ch in name):
                raise RegexError("invalid named capture", s[start : end + 1])
            # Go 1.19 (Alertmanager 0.25's toolchain) allows repeated group names.
            self.i = end + 1
            return True
        j = start + 2
        sign = 1
        saw_flag = False
        while j < len(s):
            c = s[j]
            j += 1
            if c in "imsU":
                saw_flag = True
            elif c == "-":
                if sign < 0:
                    break
                sign = -1
                saw_flag = False
            elif c in ":)":
                if sign < 0 and not saw_flag:
                    break
                self.i = j
                return c == ":"
            else:
                break
        raise RegexError("invalid or unsupported Perl syntax", s[start:j])

    def escape_outside_class(self) -> None:
        s, start = self.s, self.i
        nxt = self.peek(1)
        if nxt == "":
            raise RegexError("trailing backslash at end of expression", "")
        if nxt in "AbBz":
            self.i += 2
            return
        if nxt == "Q":
            end = s.find("\\E", start + 2)
            self.i = len(s) if end < 0 else end + 2
            return
        if nxt in _PERL_CLASSES:
            self.i += 2
            return
        if nxt in "pP":
            self.unicode_class()
            return
        self.escape()

    def escape(self) -> None:
        """A single-character escape (Go's parseEscape); the cursor is on the backslash."""
        s, start = self.s, self.i
        c = self.peek(1)
        if c == "":
            raise RegexError("trailing backslash at end of expression", "")
        self.i += 2
        if c.isascii() and not c.isalnum():
            return
        if c in "1234567":
            if self.peek() not in _OCTAL or self.peek() == "":
                raise RegexError("invalid escape sequence", s[start : self.i])
            c = "0"
        if c == "0":
            for _ in range(2):
                if self.peek() != "" and self.peek() in _OCTAL:
                    self.i += 1
            return
        if c == "x":
            if self.peek() == "{":
                end = s.find("}", self.i)
                digits = s[self.i + 1 : end] if end >= 0 else ""
                if end < 0 or not digits or any(d not in _HEX for d in digits):
                    raise RegexError(
                        "invalid escape sequence", s[start : end + 1 if end >= 0 else len(s)]
                    )
                if int(digits, 16) > 0x10FFFF:
                    raise RegexError("invalid escape sequence", s[start : end + 1])
                self.i = end + 1
                return
            pair = s[self.i : self.i + 2]
            if len(pair) < 2 or any(d not in _HEX for d in pair):
                raise RegexError("invalid escape sequence", s[start : self.i + len(pair)])
            self.i += 2
            return
        if c in _SIMPLE_ESCAPES:
            return
        raise RegexError("invalid escape sequence", s[start : self.i])

    def unicode_class(self) -> None:
        s, start = self.s, self.i
        self.i += 2
        if self.peek() == "":
            raise RegexError("invalid character class range", s[start:])
        if self.peek() == "{":
            end = s.find("}", self.i)
            if end < 0:
                raise RegexError("invalid character class range", s[start:])
            name = s[self.i + 1 : end]
            self.i = end + 1
        else:
            name = self.peek()
            self.i += 1
        name = name.removeprefix("^")
        if name not in _CATEGORIES and name not in _SCRIPTS:
            raise RegexError("invalid character class range", s[start : self.i])

    def char_class(self) -> None:
        s, start = self.s, self.i
        self.i += 1
        if self.peek() == "^":
            self.i += 1
        first = True
        while True:
            c = self.peek()
            if c == "":
                raise RegexError("missing closing ]", s[start:])
            if c == "]" and not first:
                self.i += 1
                return
            first = False
            if c == "[" and self.peek(1) == ":":
                end = s.find(":]", self.i + 2)
                if end >= 0:
                    name = s[self.i + 2 : end].removeprefix("^")
                    if name not in _POSIX_CLASSES:
                        raise RegexError("invalid character class range", s[self.i : end + 2])
                    self.i = end + 2
                    continue
            if c == "\\" and self.peek(1) in _PERL_CLASSES and self.peek(1) != "":
                self.i += 2
                continue
            if c == "\\" and self.peek(1) in ("p", "P"):
                self.unicode_class()
                continue
            range_start = self.i
            low = self.class_char()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                high = self.class_char()
                if high < low:
                    raise RegexError("invalid character class range", s[range_start : self.i])

    def class_char(self) -> int:
        s = self.s
        if self.peek() != "\\":
            char = s[self.i]
            self.i += 1
            return ord(char)
        start = self.i
        self.escape()
        return _escaped_value(s[start : self.i])


def _escaped_value(escape: str) -> int:
    body = escape[1:]
    simple = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
    if body in simple:
        return simple[body]
    if body.startswith("x{"):
        return int(body[2:-1], 16)
    if body.startswith("x"):
        return int(body[1:], 16)
    if body and body[0] in _OCTAL:
        return int(body, 8)
    return ord(body[0])


def check_go_regex(pattern: str) -> None:
    """Raise RegexError when Go's regexp.Compile would reject ``^(?:pattern)$``.

    Alertmanager anchors every regex that way, so the wrapped form is what is checked:
    `)(` is valid there, an unterminated `\\Q` is not.
    """
    _Parser("^(?:" + pattern + ")$").parse()
