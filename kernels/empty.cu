// A kernel that does nothing: measures the cost of a launch itself.
extern "C" __global__ void empty() {}
