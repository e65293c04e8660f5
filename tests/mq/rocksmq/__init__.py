"""Tests of mqctl.mq.rocksmq against the RocksMQ fixture."""
