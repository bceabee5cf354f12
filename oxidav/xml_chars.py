"""The characters XML 1.0 cannot carry, for every text that ends up inside an XML answer.

A stored calendar object or vCard is sent back inside ``calendar-data`` / ``address-data``
elements, so a write refuses text that holds one of these (RFC 5545 §3.1 and RFC 6350 §3.3
exclude the control characters from their text too), and an answer built from text stored
before that rule replaces them (``replace_xml_invalid``) instead of failing.
"""

from __future__ import annotations

import re

#: C0 controls other than TAB, LF and CR, and the non-characters U+FFFE / U+FFFF.
XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def first_xml_invalid(text: str) -> str | None:
    """The first character of ``text`` that XML cannot carry, or None."""
    found = XML_INVALID.search(text)
    return None if found is None else found.group()


def replace_xml_invalid(text: str) -> str:
    """``text`` with each character XML cannot carry replaced by U+FFFD."""
    return XML_INVALID.sub("\ufffd", text)
