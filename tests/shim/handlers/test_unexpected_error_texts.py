"""Whole-request error answers for an unexpected failure (UNKNOWN_SERVER_ERROR): the APIs whose getErrorResponse
writes Errors.message() carry the code's own text, the others none (found by the fuzzing probe against Kafka 3.9)."""

from __future__ import annotations

from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ErrorCode
from kafka_shim.shim.handlers.client_quotas import alter_client_quotas_error_response
from kafka_shim.shim.handlers.raft_voters import add_raft_voter_error_response, remove_raft_voter_error_response

TEXT = "The server experienced an unexpected error when processing the request."


def test_client_quotas_and_raft_voters_carry_the_codes_text() -> None:
    quotas = messages.AlterClientQuotasRequest(entries=[messages.AlterClientQuotasRequest.EntryData(entity=[
        messages.AlterClientQuotasRequest.EntityData(entity_type="user", entity_name="alice")], ops=[])])
    answer = alter_client_quotas_error_response(quotas, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert [(e.error_code, e.error_message) for e in answer.entries] == [(-1, TEXT)]
    for form, request in ((add_raft_voter_error_response, messages.AddRaftVoterRequest()),
                          (remove_raft_voter_error_response, messages.RemoveRaftVoterRequest())):
        answer = form(request, ErrorCode.UNKNOWN_SERVER_ERROR, None)
        assert (answer.error_code, answer.error_message) == (-1, TEXT)
        assert form(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None).error_message == "Cluster authorization failed."
