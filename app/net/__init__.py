"""Outbound network access: every server-side fetch of a caller-supplied URL goes through `OutboundGuard`."""

from app.net.guard import OutboundGuard
from app.net.policy import Resolver, system_resolver
from app.net.refusals import OutboundRefused
from app.net.responses import Fetched

__all__ = ["Fetched", "OutboundGuard", "OutboundRefused", "Resolver", "system_resolver"]
