"""vCard 3.0 <-> 4.0 conversion: photos intact, parameters and values rewritten."""

from __future__ import annotations

import base64

import pytest

from oxidav.contacts.convert import convert
from oxidav.contacts.vcard import VCard, parse_vcards
from tests.support.contacts_samples import JPEG, JPEG_B64, card


def one(text: str) -> VCard:
    return parse_vcards(text)[0]


def prop_line(vcard: VCard, name: str) -> str:
    prop = vcard.first(name)
    assert prop is not None, name
    return prop.serialize().replace("\r\n ", "").rstrip("\r\n")


def test_photo_3_to_4_and_back_is_byte_identical() -> None:
    v3 = one(card("u", "Photo Person", photo=True))
    v4 = convert(v3, "4.0")
    assert v4.version == "4.0"
    assert prop_line(v4, "PHOTO") == f"PHOTO:data:image/jpeg;base64,{JPEG_B64}"
    back = convert(v4, "3.0")
    assert prop_line(back, "PHOTO") == f"PHOTO;ENCODING=b;TYPE=JPEG:{JPEG_B64}"
    photo = back.first("PHOTO")
    assert photo is not None and base64.b64decode(photo.value) == JPEG
    assert back == v3


def test_photo_4_to_3_and_back() -> None:
    v4 = one(card("u", "P", version="4.0", photo=True))
    v3 = convert(v4, "3.0")
    assert prop_line(v3, "PHOTO") == f"PHOTO;ENCODING=b;TYPE=JPEG:{JPEG_B64}"
    again = convert(v3, "4.0")
    assert again == v4
    # through the wire format too
    assert convert(one(v3.serialize()), "4.0") == v4


def test_photo_without_type_is_sniffed_and_uri_photos() -> None:
    v3 = one(card("u", "P", extra=(f"LOGO;ENCODING=b:{JPEG_B64}",)))
    assert prop_line(convert(v3, "4.0"), "LOGO") == f"LOGO:data:image/jpeg;base64,{JPEG_B64}"
    v3 = one(card("u", "P", extra=("PHOTO;VALUE=uri;TYPE=PNG:http://x.example/p.png",)))
    v4 = convert(v3, "4.0")
    assert prop_line(v4, "PHOTO") == "PHOTO;MEDIATYPE=image/png:http://x.example/p.png"
    assert (
        prop_line(convert(v4, "3.0"), "PHOTO") == "PHOTO;VALUE=uri;TYPE=PNG:http://x.example/p.png"
    )


def test_percent_encoded_data_uri_to_3() -> None:
    v4 = one(card("u", "P", version="4.0", extra=("SOUND:data:audio/basic,hi%21",)))
    sound = convert(v4, "3.0").first("SOUND")
    assert sound is not None
    assert base64.b64decode(sound.value) == b"hi!"
    assert sound.param("TYPE") == ["BASIC"]


def test_types_pref_and_internet() -> None:
    v3 = one(
        card(
            "u",
            "P",
            extra=("EMAIL;TYPE=INTERNET,PREF,WORK:a@b.c", "TEL;WORK;VOICE:+1 555"),
        )
    )
    v4 = convert(v3, "4.0")
    assert prop_line(v4, "EMAIL") == "EMAIL;TYPE=WORK;PREF=1:a@b.c"
    assert prop_line(v4, "TEL") == "TEL;TYPE=WORK,VOICE:+1 555"
    back = convert(v4, "3.0")
    assert prop_line(back, "EMAIL") == "EMAIL;TYPE=WORK,pref:a@b.c"


def test_tel_uri_to_3() -> None:
    v4 = one(card("u", "P", version="4.0", tels=("+1-555-0100",)))
    assert prop_line(convert(v4, "3.0"), "TEL") == "TEL;TYPE=cell:+1-555-0100"


@pytest.mark.parametrize(
    ("v3", "v4"),
    [
        ("BDAY:1985-04-12", "BDAY:19850412"),
        ("BDAY;X-APPLE-OMIT-YEAR=1604:1604-04-12", "BDAY:--0412"),
        ("X-ANNIVERSARY:2001-06-30", "ANNIVERSARY:20010630"),
        ("GEO:37.386013;-122.082932", "GEO:geo:37.386013,-122.082932"),
        ("X-ADDRESSBOOKSERVER-KIND:group", "KIND:group"),
        ("X-ADDRESSBOOKSERVER-MEMBER:urn:uuid:1", "MEMBER:urn:uuid:1"),
    ],
)
def test_values_both_ways(v3: str, v4: str) -> None:
    three = one(card("u", "P", extra=(v3,)))
    four = convert(three, "4.0")
    name4 = v4.split(":", 1)[0].split(";", 1)[0]
    assert prop_line(four, name4) == v4
    name3 = v3.split(":", 1)[0].split(";", 1)[0]
    assert prop_line(convert(four, "3.0"), name3) == v3


def test_removed_properties_and_params() -> None:
    v3 = one(card("u", "P", extra=("MAILER:x", "NAME:y", "CLASS:PUBLIC", "X-KEEP:z")))
    v4 = convert(v3, "4.0")
    names = [prop.name for prop in v4.properties]
    assert "MAILER" not in names and "NAME" not in names and "CLASS" not in names
    assert "X-KEEP" in names
    v4 = one(
        card(
            "u",
            "P",
            version="4.0",
            extra=("FN;ALTID=1;LANGUAGE=ja:山田", "CLIENTPIDMAP:1;urn:uuid:x", "EMAIL;PID=1.1:a@b"),
        )
    )
    v3 = convert(v4, "3.0")
    assert len(v3.get("FN")) == 1
    assert not v3.get("CLIENTPIDMAP")
    assert prop_line(v3, "EMAIL") == "EMAIL:a@b"


def test_same_version_is_a_copy_and_input_unchanged() -> None:
    original = one(card("u", "P", photo=True))
    snapshot = original.serialize()
    same = convert(original, "3.0")
    assert same == original and same is not original
    convert(original, "4.0")
    assert original.serialize() == snapshot
    with pytest.raises(ValueError):
        convert(original, "2.1")
