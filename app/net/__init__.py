"""Outbound network access: every server-side fetch of a caller-supplied URL goes through `OutboundGuard`."""

from app.net.guard import Fetched, OutboundGuard, OutboundRefused, Resolver, system_resolver

__all__ = ["Fetched", "OutboundGuard", "OutboundRefused", "Resolver", "system_resolver"]
