"""The cashier's metrics: cash-outs booked, buy-ins resumed, and the cash-outs' lag
(public messages its consumer has not had acknowledged)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..runtime.observability.metrics import Collect, Metric, Poll, counter
from ..store.lag import consumer_lag, projection_lag
from ..wire import subjects

if TYPE_CHECKING:
    from .service import CashierService


def cashier_metrics(service: CashierService) -> Collect:
    def collect() -> list[Metric]:
        return [
            counter("cashier_requests", "requests answered by this instance", service.answered),
            counter("cashier_cash_outs", "cash-outs booked by this instance", service.cash_outs.credited),
            counter("cashier_cash_outs_repeated", "cash-outs found booked before (redelivered)",
                    service.cash_outs.repeated),
            counter("cashier_buy_ins_resumed", "buy-ins settled by a resume", service.recovery.resumed),
        ]

    return collect


def cashier_lag(observer: Any, consumer: str) -> Poll:
    return projection_lag("cashier", lambda: consumer_lag(observer.nc, subjects.PUBLIC_STREAM, consumer))
