"""Small requests cannot ask for large answers (issue 24, case 4), over HTTP against a live
oxidav (SQLite and PostgreSQL): an addressbook-multiget naming one card many times, in several
spellings, answers it once, each property once; one naming more than ``max_report_hrefs`` hrefs
is refused with 403 ``DAV:number-of-matches-within-limits``."""

from __future__ import annotations

from lxml import etree

from tests.support.carddav_client import NS, C, CardDav, card_path, prop_xml
from tests.support.contacts_samples import card
from tests.support.live import LiveServer


def test_multiget_answers_a_repeated_href_and_property_once(live_server: LiveServer) -> None:
    dav = CardDav(live_server)
    text = card("1", "Anna " + "Ä" * 20_000)
    assert dav.put("1.vcf", text).status == 201
    href = card_path("alice", "1.vcf")
    spellings = [href, href.replace("1.vcf", "%31.vcf"), live_server.base_url + href]
    props = prop_xml(*(["D:getetag", "C:address-data"] * 100))
    answer = dav.multiget([spellings[i % 3] for i in range(60)], props=props)
    assert answer.status == 207
    found = etree.fromstring(answer.body).findall("D:response", NS)
    assert [r.findtext("D:href", namespaces=NS) for r in found] == [href]
    assert len(found[0].findall(f".//{{{C}}}address-data")) == 1
    assert len(found[0].findall(".//D:getetag", NS)) == 1
    assert len(answer.body) < 2 * len(text.encode())


def test_multiget_over_the_href_cap_is_refused(live_server: LiveServer) -> None:
    dav = CardDav(live_server)
    limit = live_server.settings.max_report_hrefs
    answer = dav.multiget([card_path("alice", f"{i}.vcf") for i in range(limit + 1)])
    assert answer.status == 403
    error = etree.fromstring(answer.body)
    assert [child.tag for child in error] == ["{DAV:}number-of-matches-within-limits"]
