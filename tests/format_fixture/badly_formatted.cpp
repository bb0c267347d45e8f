// A file clang-format would change (test format.check_caught): the check must fail on it.
int  badly_formatted( int a,int b ){return a+b;}
