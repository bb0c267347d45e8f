// A fixture for docs.self_contained_caught: a comment that sends the reader to a file this
// repository does not have (see SPEC 2.4).
