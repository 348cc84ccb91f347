package topicoverlap

// ProductStatesMade is told how many product states each search step makes.
var ProductStatesMade = &productStatesMade
