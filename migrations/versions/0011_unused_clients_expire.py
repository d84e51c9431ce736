"""self-registered clients no one linked through expire: an index for the sweep, a day's grace for those of before

Revision ID: 0011_unused_clients_expire
Revises: 0010_upstream_identities
Create Date: 2026-12-03
"""
from __future__ import annotations

import time

from alembic import op

revision = "0011_unused_clients_expire"
down_revision = "0010_upstream_identities"
branch_labels = None
depends_on = None

GRACE = 24 * 3600  # the default APP_OAUTH_DCR_UNUSED_TTL, counted from the upgrade


def upgrade() -> None:
    op.create_index("ix_oauth_clients_expires_at", "oauth_clients", ["expires_at"])
    # DCR clients registered before this rule never expired: those no one has linked through get a day from now.
    op.execute(f"UPDATE oauth_clients SET expires_at = {int(time.time()) + GRACE} WHERE kind = 'dcr' AND "
               "expires_at IS NULL AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = "
               "oauth_clients.client_id)")


def downgrade() -> None:
    # The older code reads expires_at of CIMD rows only; a DCR row's would be ignored, but is cleared for clarity.
    op.execute("UPDATE oauth_clients SET expires_at = NULL WHERE kind = 'dcr'")
    op.drop_index("ix_oauth_clients_expires_at", table_name="oauth_clients")
