package service

// Hooks and limits for the external tests.
var (
	ProductStatesMade = &productStatesMade
	CrossCheckBudget  = crossCheckBudget
)
