# The dependencies posenc::posenc carries to its consumers; posencConfig.cmake finds the same set.
find_package(xtl REQUIRED)
find_package(xtensor REQUIRED)
find_package(BLAS REQUIRED)
find_package(xtensor-blas REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)  # the kernels split work over threads (threads.hpp)
