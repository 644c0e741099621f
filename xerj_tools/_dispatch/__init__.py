"""The dispatcher: a call prepared, guarded by the policy, sent, read and answered."""
