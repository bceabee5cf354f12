"""Login Flow v2: start, the browser form (CSRF secret, password check), poll exactly once,
and the app password then works for WebDAV."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from urllib.parse import urlencode, urlsplit

from sqlalchemy import update

from oxidav.db import utcnow
from oxidav.db.models.nextcloud import LoginFlow
from oxidav.nextcloud.login_flow import FLOW_LIFETIME
from tests.support.live import LiveServer

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def _start(s: LiveServer) -> tuple[str, str]:
    response = s.request("POST", "/index.php/login/v2", user=None)
    assert response.status == 200
    data = json.loads(response.body)
    assert data["poll"]["endpoint"] == f"{s.base_url}/index.php/login/v2/poll"
    assert data["login"].startswith(f"{s.base_url}/index.php/login/v2/flow/")
    return data["poll"]["token"], urlsplit(data["login"]).path


def _poll(s: LiveServer, token: str) -> tuple[int, bytes]:
    response = s.request(
        "POST",
        "/index.php/login/v2/poll",
        body=urlencode({"token": token}),
        headers=FORM,
        user=None,
    )
    return response.status, response.body


def _csrf(s: LiveServer, login_path: str) -> str:
    page = s.request("GET", login_path, user=None)
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    match = re.search(r"name='csrf' value='([^']+)'", page.text)
    assert match is not None, page.text
    return match.group(1)


def _submit(s: LiveServer, login_path: str, **fields: str) -> int:
    response = s.request("POST", login_path, body=urlencode(fields), headers=FORM, user=None)
    return response.status


def test_login_flow_grants_an_app_password_once(live_server: LiveServer) -> None:
    s = live_server
    poll_token, login_path = _start(s)
    assert _poll(s, poll_token)[0] == 404  # not logged in yet
    csrf = _csrf(s, login_path)
    assert _submit(s, login_path, user="alice", password="secret", csrf="forged") == 403
    assert _submit(s, login_path, user="alice", password="wrong", csrf=csrf) == 401
    assert _poll(s, poll_token)[0] == 404
    assert _submit(s, login_path, user="alice", password="secret", csrf=csrf) == 200
    status, body = _poll(s, poll_token)
    assert status == 200
    data = json.loads(body)
    assert data["server"] == s.base_url and data["loginName"] == "alice"
    app_password = data["appPassword"]
    # The app password is a password everywhere; the flow is gone.
    propfind = s.request(
        "PROPFIND",
        "/remote.php/dav/files/alice/",
        headers={"Depth": "0"},
        password=app_password,
    )
    assert propfind.status == 207
    assert _poll(s, poll_token)[0] == 404
    assert s.request("GET", login_path, user=None).status == 404


def test_unknown_and_expired_flows(live_server: LiveServer) -> None:
    s = live_server
    assert _poll(s, "nope")[0] == 404
    assert s.request("GET", "/index.php/login/v2/flow/nope", user=None).status == 404
    assert s.request("GET", "/index.php/login/v2", user=None).status == 404
    poll_token, login_path = _start(s)
    csrf = _csrf(s, login_path)
    assert s.services is not None
    with s.services.db.write() as session:
        session.execute(
            update(LoginFlow).values(created_at=utcnow() - FLOW_LIFETIME - timedelta(seconds=1))
        )
    assert _submit(s, login_path, user="alice", password="secret", csrf=csrf) == 404
    assert _poll(s, poll_token)[0] == 404
