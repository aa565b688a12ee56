"""Hosts as Alertmanager dials them, so that the receivers firewall judges what is dialled.

Go's net/http dials a URL's host as ``URL.Hostname()`` gives it (percent-escapes decoded;
Go allows them in a host only for non-ASCII bytes and ``%25``), and maps a host that is not
ASCII through IDNA (``idna.Lookup.ToASCII``: UTS-46 non-transitional mapping with the STD3
rules, then A-labels). That mapping turns full-width, circled and superscript digits and
letters into ASCII and the ideographic full stops (U+3002, U+FF0E, U+FF61) into dots:
``http://\uff11\uff12\uff17\uff0e0\uff0e0\uff0e1/`` (full-width digits and full stops) is a
connection to 127.0.0.1. ASCII hosts are dialled as written.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import unquote_to_bytes

import idna

# Label separators UTS-46 maps to ".": ideographic, full-width and half-width full stops.
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})


def unescape_host(host: str) -> str:
    """URL.Hostname()'s host: percent-escapes decoded (bytes that are not UTF-8 are kept as
    surrogates, which no later step accepts as a host)."""
    if "%" not in host:
        return host
    return unquote_to_bytes(host).decode("utf-8", "surrogateescape")


def dialled_hosts(host: str) -> list[str]:
    """The ASCII forms Alertmanager may dial for ``host``: the host itself when it is ASCII;
    otherwise its UTS-46 A-label form (Go's) and, where it differs, its NFKC case-folded
    form (for Unicode versions apart, and the transitional mapping of older Go releases:
    ß as ss), each to be judged. Raise ValueError when ``host`` is not ASCII and not a
    valid internationalised domain name: what Go would dial is then not known."""
    if host.isascii():
        return [host]
    try:
        forms = [idna.encode(host, uts46=True, std3_rules=True).decode("ascii")]
    except (idna.IDNAError, UnicodeError, ValueError) as exc:
        raise ValueError(f"not an ASCII host name nor a valid IDNA domain name ({exc})") from None
    folded = unicodedata.normalize("NFKC", host).translate(_DOTS).casefold()
    if folded.isascii():
        forms.append(folded)
    return list(dict.fromkeys(forms))
