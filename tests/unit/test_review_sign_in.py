"""The listing's sign-in (app/authserver/review.py) against a server that points elsewhere: the
password goes to the server being replayed, or nowhere. The server is played through httpx's
in-process transport: every request it receives is kept, so the test sees where the password
went."""

from __future__ import annotations

import json

import httpx
import pytest

from app.authserver.review import SignInRefused, sign_in

pytestmark = pytest.mark.authserver
BASE = "https://app.example"
LOGIN = ('<form method="post" action="{action}"><input name="csrf" value="1">'
         '<input name="username"><input name="password"></form>')


def played(metadata: dict[str, str], action: str = "/login",
           alert: str = "") -> tuple[httpx.Client, list[httpx.Request]]:
    received: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        received.append(request)
        path = request.url.path
        if path == "/.well-known/oauth-authorization-server":
            return httpx.Response(200, json=metadata)
        if path == "/register":
            return httpx.Response(201, json={"client_id": "c1"})
        if path == "/authorize":
            return httpx.Response(200, text=LOGIN.format(action=action))
        return httpx.Response(200, text=f'<p role="alert">{alert}</p><form action="/x"></form>')

    return httpx.Client(transport=httpx.MockTransport(answer)), received


def endpoints(origin: str = BASE) -> dict[str, str]:
    return {"issuer": BASE, "authorization_endpoint": f"{origin}/authorize",
            "token_endpoint": f"{BASE}/token", "registration_endpoint": f"{BASE}/register"}


def _sent_password(received: list[httpx.Request]) -> bool:
    return any(b"S3cret-pass" in request.content for request in received)


@pytest.mark.parametrize(("metadata", "action", "said"), [
    ({**endpoints(), "issuer": "https://evil.example"}, "/login",
     "the metadata at https://app.example is another issuer's"),
    (endpoints("http://app.example"), "/login",
     "authorization_endpoint points at http://app.example, not at https://app.example: the "
     "password stays unsent"),
    (endpoints(), "https://collector.example/steal",
     "the sign-in form points at https://collector.example, not at https://app.example: the "
     "password stays unsent"),
])
def test_the_password_goes_to_the_server_replayed_or_nowhere(metadata, action, said):
    http, received = played(metadata, action)
    with pytest.raises(SignInRefused) as refused:
        sign_in(http, BASE, f"{BASE}/mcp", "notes.read", "reviewer", "S3cret-pass")
    assert str(refused.value) == said
    assert not _sent_password(received)


def test_a_page_that_echoes_the_password_is_said_without_it():
    http, received = played(endpoints(), alert="Wrong password S3cret-pass for reviewer")
    with pytest.raises(SignInRefused) as refused:
        sign_in(http, BASE, f"{BASE}/mcp", "notes.read", "reviewer", "S3cret-pass")
    assert str(refused.value) == ("signing in as reviewer: Wrong password [hidden] for reviewer")
    # It was sent once, to the server's own sign-in form.
    assert [r.url.path for r in received if b"S3cret-pass" in r.content] == ["/login"]
    assert json.loads(received[1].content)["redirect_uris"] == ["http://127.0.0.1/listing-replay"]
