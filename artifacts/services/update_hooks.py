"""What happens when an update bundle is accepted, beyond its deposit.

The dependency runs gates → artifacts, so the ingest cannot re-open the awarded
vendor's gates itself. gates registers a hook (``update_accepted``) when Django
starts (``GatesConfig.ready()``): a callable that takes the accepted update
bundle, the accepted bundle it updates and the uploader, and raises the
re-validation the update calls for. The ingest calls every hook inside its
accept transaction, after the deposit: the acceptance, its deposit and what
the hooks record commit or roll back together. With no hook registered
(artifacts on its own) an update is deposited and nothing more."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from accounts.lib.registry import Registry

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from artifacts.models import Bundle


class UpdateAccepted(Protocol):
    def __call__(
        self, *, bundle: Bundle, superseded: Bundle, actor: User
    ) -> object: ...


# gates' hook (``gates.services.revalidation.update_revalidation_raise``).
update_accepted: Registry[UpdateAccepted] = Registry(
    "artifacts.services.update_hooks.update_accepted"
)


def update_accepted_run(*, bundle: Bundle, superseded: Bundle, actor: User) -> None:
    """Run every registered hook on the accepted update (in the caller's
    transaction)."""
    for _key, hook in update_accepted.items():
        hook(bundle=bundle, superseded=superseded, actor=actor)
