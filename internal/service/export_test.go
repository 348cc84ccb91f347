package service

import "github.com/kmirror/kmirror/internal/topicoverlap"

// CrossCheckBudget bounds the regex searches of one CheckAgainstTasks.
const CrossCheckBudget = crossCheckBudget

// ObserveOverlapSearches calls seen with the budget units each cross-task
// regex search spends, until the returned function is called.
func ObserveOverlapSearches(seen func(spent int)) (restore func()) {
	find := findTopic
	findTopic = func(regexes []string, ex topicoverlap.Exclude, want func(string) bool, budget *int) (string, bool) {
		before := *budget
		defer func() { seen(before - *budget) }()
		return find(regexes, ex, want, budget)
	}
	return func() { findTopic = find }
}

// AuditText is auditText, for its table test.
var AuditText = auditText
