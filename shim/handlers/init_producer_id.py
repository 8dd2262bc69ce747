"""InitProducerId (key 22), v0-5: producer ids for idempotent producers, as a Kafka 3.9 KRaft broker answers.

Behaviour (KafkaApis.handleInitProducerIdRequest, TransactionCoordinator.handleInitProducerId):

- With a ``transactional_id``: WRITE on that TRANSACTIONAL_ID, else 53. Without: IDEMPOTENT_WRITE on the CLUSTER
  (a denial not logged at INFO) or, KIP-679, WRITE on at least one TOPIC (``authorizeByResourceType``: a literal or
  prefixed ALLOW not dominated by a DENY), else 31 (CLUSTER_AUTHORIZATION_FAILED). Both declared in
  authorizer.api_checks (key 22).
- A producer id given without an epoch, or an epoch without an id (v3+): 42 (INVALID_REQUEST).
- No transactional id: a new producer id at epoch 0, whatever id and epoch the request carries (ids from
  shim.producers.ids: blocks of 1000, never repeated, kept in log.dirs when there is one).
- A transactional id goes to the transaction coordinator (shim.txn.coordinator): an empty one is 42, a
  ``transaction_timeout_ms`` outside (0, ``transaction.max.timeout.ms``] 50 (INVALID_TRANSACTION_TIMEOUT), a node that
  does not lead the id's ``__transaction_state`` partition (or before that topic exists) 16 (NOT_COORDINATOR); then
  the coordinator's epoch bump, fencing and KIP-360 checks. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v4.

Every error answers producer id -1 and epoch -1 (InitProducerIdRequest.getErrorResponse). Version notes: v2+
flexible; v3+ carry the producer id and epoch (KIP-360); v4-5 add no fields.
"""

from __future__ import annotations

from kafka_shim.authorizer import CLUSTER_NAME
from kafka_shim.authorizer.api_checks.releases import IDEMPOTENT_WRITE_CLUSTER
from kafka_shim.protocol import messages
from kafka_shim.protocol.codes import ApiKey, ErrorCode
from kafka_shim.protocol.messages import InitProducerIdResponse
from kafka_shim.shim.config.logging import get_logger
from kafka_shim.shim.handlers import handles
from kafka_shim.shim.producers.ids import ProducerIdsExhausted
from kafka_shim.shim.requests.authz import allowed, allowed_on_any, check, shortcut_allowed
from kafka_shim.shim.requests.context import RequestContext
from kafka_shim.shim.requests.coordination import coordinator_for

log = get_logger(__name__)

_TXN, _IDEMPOTENT = check(ApiKey.INIT_PRODUCER_ID, "transactional_id"), check(ApiKey.INIT_PRODUCER_ID, "idempotent")
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms


def init_producer_id_error_response(request: messages.InitProducerIdRequest, code: int, message: str | None) -> InitProducerIdResponse:
    """Kafka's InitProducerIdRequest.getErrorResponse: the error, producer id -1, epoch -1."""
    return InitProducerIdResponse(error_code=code, producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH, throttle_time_ms=0)


def _error(code: ErrorCode) -> InitProducerIdResponse:
    return init_producer_id_error_response(None, code, None)  # type: ignore[arg-type]


@handles(ApiKey.INIT_PRODUCER_ID, 0, 5, error_response=init_producer_id_error_response)
def init_producer_id(ctx: RequestContext, request: messages.InitProducerIdRequest) -> InitProducerIdResponse:
    transactional_id = request.transactional_id
    if transactional_id is not None:
        if not allowed(ctx, _TXN, transactional_id):
            return _error(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif ctx.services.release_rules.idempotent_needs_cluster:
        # KIP-679: before 2.8, only IDEMPOTENT_WRITE on the cluster lets an idempotent producer start.
        if not allowed(ctx, IDEMPOTENT_WRITE_CLUSTER, CLUSTER_NAME):
            return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    elif not shortcut_allowed(ctx, _IDEMPOTENT) and not allowed_on_any(ctx, _IDEMPOTENT):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)

    producer_id = request.producer_id if ctx.api_version >= 3 else NO_PRODUCER_ID
    epoch = request.producer_epoch if ctx.api_version >= 3 else NO_PRODUCER_EPOCH
    if (producer_id == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
        return _error(ErrorCode.INVALID_REQUEST)

    if transactional_id is None:
        allocator = ctx.services.producer_ids
        if allocator is None:
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        try:
            granted = allocator.init_idempotent_producer()
        except ProducerIdsExhausted as exc:
            log.error("producer_ids_exhausted", reason=str(exc))
            return _error(ErrorCode.UNKNOWN_SERVER_ERROR)
        except OSError as exc:  # the id file could not be written: no id may leave before it is
            log.error("producer_id_block_not_persisted", reason=str(exc), hint="free space in log.dirs or fix the disk")
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=granted.producer_id,
                                      producer_epoch=granted.epoch, throttle_time_ms=0)

    coordinator = coordinator_for(ctx, transactional_id)
    if isinstance(coordinator, int):
        if transactional_id == "":
            return _error(ErrorCode.INVALID_REQUEST)
        if not 0 < request.transaction_timeout_ms <= _transaction_max_timeout_ms(ctx):
            return _error(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        return _error(ErrorCode(coordinator))
    expected = None if producer_id == NO_PRODUCER_ID else (producer_id, epoch)
    try:
        result = coordinator.init_producer_id(transactional_id, request.transaction_timeout_ms, expected)
    except ProducerIdsExhausted as exc:
        log.error("producer_ids_exhausted", reason=str(exc))
        return _error(ErrorCode.UNKNOWN_SERVER_ERROR)
    except OSError as exc:
        log.error("producer_id_block_not_persisted", reason=str(exc), hint="free space in log.dirs or fix the disk")
        return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    code = result.error
    if code == ErrorCode.PRODUCER_FENCED and ctx.api_version < 4:
        code = ErrorCode.INVALID_PRODUCER_EPOCH  # clients before KIP-588 do not know PRODUCER_FENCED
    if code != ErrorCode.NONE:
        return _error(ErrorCode(code))
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=result.producer_id,
                                  producer_epoch=result.producer_epoch, throttle_time_ms=0)


def _transaction_max_timeout_ms(ctx: RequestContext) -> int:
    text = ctx.services.config.raw.get("transaction.max.timeout.ms", str(DEFAULT_TRANSACTION_MAX_TIMEOUT_MS))
    try:
        return int(text)
    except ValueError:
        log.warning("transaction_max_timeout_unreadable", value=text, used=DEFAULT_TRANSACTION_MAX_TIMEOUT_MS,
                    hint="set transaction.max.timeout.ms to a number of milliseconds")
        return DEFAULT_TRANSACTION_MAX_TIMEOUT_MS
