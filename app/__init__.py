"""Reference MCP app server for ChatGPT."""

__version__ = "0.1.0"
