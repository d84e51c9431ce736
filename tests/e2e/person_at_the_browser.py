"""A person at a browser, for a client that opens the system browser (``$BROWSER URL``, as xdg-open does): signs
in on the authorization server's pages with $PERSON_USERNAME / $PERSON_PASSWORD, approves, and follows the
redirect back to the client's own callback (a loopback listener it runs)."""

from __future__ import annotations

import os
import sys
from urllib.parse import urlsplit

import httpx

from tests.e2e.oauth_client import Browser, query_of


def main(url: str) -> None:
    parts = urlsplit(url)
    location = Browser(f"{parts.scheme}://{parts.netloc}").sign_in(query_of(url), os.environ["PERSON_USERNAME"],
                                                                  os.environ["PERSON_PASSWORD"])
    httpx.get(location, timeout=15)


if __name__ == "__main__":
    main(sys.argv[1])
