"""One structured audit line per denial, on the ``oxidav.audit`` logger.

The message is ``key=value`` text for people and log shippers; the same fields ride along as
``record.oxidav_audit`` (a dict) for handlers that want them structured.
"""

from __future__ import annotations

import logging

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.decision import Decision
from oxidav.authz.grants.resources import Resource
from oxidav.authz.grants.roles import Action

audit = logging.getLogger("oxidav.audit")


def log_denial(
    principal: Principal, action: Action, resource: Resource, decision: Decision
) -> None:
    """Who (principal), what (action), which resource, why (reason) and the answer (status)."""
    if not audit.isEnabledFor(logging.INFO):
        return
    fields = {
        "user": principal.username,
        "user_id": principal.user_id,
        "action": action.value,
        "resource": resource.describe(),
        "permissions": decision.permissions,
        "status": decision.status,
        "reason": decision.reason,
    }
    audit.info(
        "deny user=%r user_id=%d action=%s resource=%s permissions=%s status=%d reason=%r",
        principal.username,
        principal.user_id,
        action.value,
        fields["resource"],
        "-" if decision.permissions is None else decision.permissions,
        decision.status,
        decision.reason,
        extra={"oxidav_audit": fields},
    )
