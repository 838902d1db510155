"""graphrun's replay service from Python: capture a workload once, replay it, serve steps with
numpy inputs and outputs, or through lanes (a doorbell in shared memory, Client.open_lane). See
python/README.md and replay/PROTOCOL.md."""

from .client import (BadInputError, Client, GraphrunError, NoDeviceError, ProtocolError, RunError,
                     ServiceError, default_socket, error_for)
from .lane import Doorbell, Lane

__all__ = ["Client", "GraphrunError", "BadInputError", "NoDeviceError", "ProtocolError",
           "ServiceError", "RunError", "default_socket", "error_for", "Lane", "Doorbell"]
__version__ = "0.1.0"
