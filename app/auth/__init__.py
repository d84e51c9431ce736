"""Who is calling, and what they may do.

The resource-server side: the SDK's bearer backend and ``get_access_token()``
(``resource_server.py``), the per-tool schemes and the challenges that start
ChatGPT's account linking (``schemes.py``). Nothing here knows about MCP tools.
"""
