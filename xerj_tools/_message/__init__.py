"""What the model reads: error messages, hints, the budget and the fitting of answers."""
