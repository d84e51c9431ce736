"""Who is calling, and what they may do: the resource-server side, whichever server issued the token.

The SDK's bearer backend and ``get_access_token()`` (``resource_server.py``), the per-tool schemes and the
challenges that start ChatGPT's account linking (``schemes.py``), scopes (``scopes.py``), and the checks every
access token passes, with the verifier of an external IdP's tokens (``tokens.py``). Nothing here knows about
MCP tools, nor about the built-in authorization server (``app.authserver``), which a fork may delete.
"""
