// tests/install/main.cpp — builds against the installed headers and library.
#include <keystone.h>

#include <iostream>

int main() {
  ks::Tensor x = ks::tensor({1, 2, 3}, {3}, {.requires_grad = true});
  ks::Tensor y = ks::sum(ks::mul(x, x));
  ks::backward(y);
  std::cout << x.grad() << "\n";
  return x.grad().to_vector<float>() == std::vector<float>{2, 4, 6} ? 0 : 1;
}
