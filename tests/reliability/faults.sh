#!/bin/bash
# placeholder: written by the reliability helpers (issue 5)
. "$top_srcdir/tests/integration/lib.sh"
t_init faults
t_skip "not written yet"
