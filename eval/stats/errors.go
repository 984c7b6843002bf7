package stats

import "errors"

// Sentinel errors of the correlation functions; test with errors.Is.
var (
	// ErrLength: x and y differ in length.
	ErrLength = errors.New("stats: x and y have different lengths")
	// ErrTooFew: fewer observations than the statistic needs (2 for
	// Pearson and Kendall, 3 for Spearman's p-value).
	ErrTooFew = errors.New("stats: too few observations")
	// ErrConstant: an input is constant, so the correlation is undefined
	// (scipy returns NaN with a ConstantInputWarning).
	ErrConstant = errors.New("stats: constant input, correlation undefined")
	// ErrNaN: an input contains NaN (scipy's nan_policy='propagate'
	// would return NaN).
	ErrNaN = errors.New("stats: input contains NaN")
)
