"""accy: tensor programs to CUDA with an explicit memory plan."""
