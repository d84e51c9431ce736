"""Cafés: ``recommend_cafe`` reads the locale and coarse city hints ChatGPT sends."""
