"""The home's vocabulary: every content word of the stored memories with its vector and its nearest
words, so a query can be widened with the words the home itself uses for the same things
(``expand``; design and figures in bench/results/locomo.md, sessions 6 and 8). ``store`` holds
the words, ``service`` keeps them up to date in a running core."""
