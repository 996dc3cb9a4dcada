"""The real-time policy, in one room: which frames each decoder step gets and when (the window plan,
`plan.py`; the decoder's measured speed, `speed.py`; a segment decoded step by step, `steps.py`) and
whose step comes next (`scheduler.py`: queues, backpressure, admission; `picking.py`: earliest deadline
first; `runner.py`: the picked turn, run). It drives the engines, which decode whatever frame ranges
they are given."""
