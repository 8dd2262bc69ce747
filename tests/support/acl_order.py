"""Canonical order for ACL answers before comparing them with Kafka's.

Kafka groups DescribeAcls resources through a Java HashMap keyed by ResourcePattern, whose hash mixes enum
identity hash codes: the order changes from one broker process to the next (two real Kafkas with the same ACLs
disagree). DeleteAcls lists matches in the order of a map keyed by random ACL ids. Only the order is canonicalised
here; every field is still compared.
"""

from __future__ import annotations

import re
from typing import Any

from tests.support.wire import Answer

_NOT_AUTHORIZED = re.compile(r"^Request Request\(processor=.*\) is not authorized\.$", re.DOTALL)


def _acl_key(a: Any) -> tuple:
    return (a.principal, a.host, a.operation, a.permission_type)


def canonical(answer: Answer) -> Answer:
    """Sort DescribeAcls resources and their ACLs, and DeleteAcls matches, in place; other answers are left alone."""
    body = answer.body
    if answer.closed or body is None:
        return answer
    if hasattr(body, "resources"):
        for resource in body.resources:
            resource.acls.sort(key=_acl_key)
        body.resources.sort(key=lambda r: (r.resource_type, r.resource_name, r.pattern_type))
    if hasattr(body, "filter_results"):
        for result in body.filter_results:
            result.matching_acls.sort(key=lambda m: (m.resource_type, m.resource_name, m.pattern_type, *_acl_key(m)))
    return answer


def mask_not_authorized(answer: Answer) -> Answer:
    """Replace Kafka's ClusterAuthorizationException text, which quotes the request object, by a fixed form.

    For CreateAcls and DeleteAcls the text Kafka sends is built on the controller and quotes the forwarded
    envelope (its buffer sizes included), so even compare.py's connection mask leaves request-specific text.
    """
    def walk(node: Any) -> None:
        for name in getattr(node, "_fields", ()):
            value = getattr(node, name)
            if name == "error_message" and isinstance(value, str) and _NOT_AUTHORIZED.match(value):
                setattr(node, name, "Request <request> is not authorized.")
            elif isinstance(value, list):
                for item in value:
                    walk(item)

    if not answer.closed:
        walk(answer.body)
    return answer
