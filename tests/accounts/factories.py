from __future__ import annotations

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from factory.django import DjangoModelFactory

from accounts.models import Membership, Organisation, Role

PASSWORD = "correct horse battery"


class OrganisationFactory(DjangoModelFactory[Organisation]):
    class Meta:
        model = Organisation
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"org-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())
    kind = Organisation.Kind.BUYER


class UserFactory(DjangoModelFactory[User]):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.django.Password(PASSWORD)


class MembershipFactory(DjangoModelFactory[Membership]):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    organisation = factory.SubFactory(OrganisationFactory)
    role = Role.BUYER
